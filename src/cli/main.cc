// The only main(): `madeira serve | migrate | recover | task | dead | version`.
#include <curl/curl.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "cli/client.h"
#include "cli/config.h"
#include "cli/serve.h"
#include "cli/store_open.h"

namespace {

using madeira::cli::ClientOptions;

// CLI11 2.1 has no std::optional binding; an option that was not given must stay empty so
// the environment and the config file can still supply the value.
template <typename T>
CLI::Option* AddOptional(CLI::App* app, const std::string& name, std::optional<T>& out,
                         const std::string& help) {
  return app->add_option_function<T>(
      name, [&out](const T& v) { out = v; }, help);
}

void AddClientOptions(CLI::App* app, ClientOptions& opts) {
  app->add_option("--url", opts.url, "Base URL of the Madeira API")
      ->envname("MADEIRA_URL")
      ->capture_default_str();
  // No default capture: help must never print a token.
  app->add_option("--token", opts.token, "Bearer token")->envname("MADEIRA_TOKEN");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Madeira: one task dispatcher with the same semantics for every language"};
  app.require_subcommand(1);
  int exit_code = 0;

  // serve
  madeira::cli::ServeFlags serve_flags;
  CLI::App* serve = app.add_subcommand("serve", "Run the server");
  AddOptional(serve, "--config", serve_flags.config_file, "TOML config file (env MADEIRA_CONFIG)");
  AddOptional(serve, "--listen", serve_flags.listen, "HOST:PORT (env MADEIRA_LISTEN)");
  AddOptional(serve, "--data-dir", serve_flags.data_dir, "Data directory (env MADEIRA_DATA_DIR)");
  AddOptional(serve, "--store", serve_flags.store, "sqlite | redis-pg (env MADEIRA_STORE)")
      ->check(CLI::IsMember({"sqlite", "redis-pg"}));
  AddOptional(serve, "--redis-url", serve_flags.redis_url, "Redis URL (env MADEIRA_REDIS_URL)");
  AddOptional(serve, "--database-url", serve_flags.database_url,
              "PostgreSQL URL (env MADEIRA_DATABASE_URL)");
  AddOptional(serve, "--role", serve_flags.role, "all | api | scheduler | deliverer")
      ->check(CLI::IsMember({"all", "api", "scheduler", "deliverer"}));
  serve->add_flag("--allow-volatile-redis", serve_flags.allow_volatile_redis,
                  "redis-pg: accept a Redis without appendonly yes + appendfsync always");
  AddOptional(serve, "--namespace", serve_flags.name_space,
              "redis-pg: key prefix / PostgreSQL schema suffix (env MADEIRA_NAMESPACE)");
  serve->callback([&] { exit_code = madeira::cli::RunServe(serve_flags); });

  // migrate
  madeira::cli::ServeFlags migrate_flags;
  CLI::App* migrate =
      app.add_subcommand("migrate", "Bring the store's schema up to this version, then exit");
  AddOptional(migrate, "--config", migrate_flags.config_file, "TOML config file");
  AddOptional(migrate, "--data-dir", migrate_flags.data_dir, "Data directory (sqlite)");
  AddOptional(migrate, "--store", migrate_flags.store, "sqlite | redis-pg")
      ->check(CLI::IsMember({"sqlite", "redis-pg"}));
  AddOptional(migrate, "--database-url", migrate_flags.database_url,
              "PostgreSQL URL (env MADEIRA_DATABASE_URL)");
  AddOptional(migrate, "--namespace", migrate_flags.name_space,
              "redis-pg: PostgreSQL schema suffix (env MADEIRA_NAMESPACE)");
  migrate->callback([&] { exit_code = madeira::cli::RunMigrate(migrate_flags); });

  // recover
  madeira::cli::ServeFlags recover_flags;
  CLI::App* recover = app.add_subcommand(
      "recover", "redis-pg: rebuild Redis's in-flight state from PostgreSQL after Redis lost data");
  AddOptional(recover, "--config", recover_flags.config_file, "TOML config file");
  AddOptional(recover, "--store", recover_flags.store, "redis-pg")
      ->check(CLI::IsMember({"sqlite", "redis-pg"}));
  AddOptional(recover, "--redis-url", recover_flags.redis_url, "Redis URL (env MADEIRA_REDIS_URL)");
  AddOptional(recover, "--database-url", recover_flags.database_url,
              "PostgreSQL URL (env MADEIRA_DATABASE_URL)");
  AddOptional(recover, "--namespace", recover_flags.name_space,
              "key prefix / PostgreSQL schema suffix (env MADEIRA_NAMESPACE)");
  recover->add_flag("--allow-volatile-redis", recover_flags.allow_volatile_redis,
                    "accept a Redis without appendonly yes + appendfsync always");
  recover->callback([&] { exit_code = madeira::cli::RunRecover(recover_flags); });

  // task
  ClientOptions task_opts;
  CLI::App* task = app.add_subcommand("task", "Submit, read and cancel tasks");
  task->require_subcommand(1);
  AddClientOptions(task, task_opts);

  madeira::cli::SubmitArgs submit_args;
  CLI::App* submit = task->add_subcommand("submit", "Submit one task (POST /v1/tasks)");
  AddOptional(submit, "--type", submit_args.task_type, "task_type");
  AddOptional(submit, "--payload", submit_args.payload, "payload as a JSON object");
  AddOptional(submit, "--payload-version", submit_args.payload_version, "payload_version (1)");
  AddOptional(submit, "--queue", submit_args.queue, "queue (default)");
  AddOptional(submit, "--delay", submit_args.delay, "run after this long, e.g. 30s");
  AddOptional(submit, "--at", submit_args.at, "run at this RFC 3339 time");
  AddOptional(submit, "--priority", submit_args.priority, "0..1000, larger first (100)");
  AddOptional(submit, "--idempotency-key", submit_args.idempotency_key, "business key");
  AddOptional(submit, "--task-id", submit_args.task_id, "task_id (server-made when absent)");
  AddOptional(submit, "--file", submit_args.file, "a whole envelope as a JSON file");
  submit->callback([&] { exit_code = madeira::cli::RunTaskSubmit(task_opts, submit_args); });

  std::string task_id;
  CLI::App* get = task->add_subcommand("get", "Show one task (GET /v1/tasks/{id})");
  get->add_option("id", task_id, "task_id")->required();
  get->callback([&] { exit_code = madeira::cli::RunTaskGet(task_opts, task_id); });
  CLI::App* cancel = task->add_subcommand("cancel", "Cancel one task");
  cancel->add_option("id", task_id, "task_id")->required();
  cancel->callback([&] { exit_code = madeira::cli::RunTaskCancel(task_opts, task_id); });

  // dead
  ClientOptions dead_opts;
  CLI::App* dead = app.add_subcommand("dead", "List, replay and cancel dead tasks");
  dead->require_subcommand(1);
  AddClientOptions(dead, dead_opts);

  madeira::cli::DeadListArgs list_args;
  CLI::App* list = dead->add_subcommand("list", "List dead tasks (GET /v1/dead)");
  AddOptional(list, "--queue", list_args.queue, "only this queue");
  AddOptional(list, "--type", list_args.task_type, "only this task_type");
  AddOptional(list, "--limit", list_args.limit, "at most this many");
  list->callback([&] { exit_code = madeira::cli::RunDeadList(dead_opts, list_args); });

  // replay and cancel pick dead tasks the same way: IDs..., or --all narrowed by a filter.
  auto add_bulk = [&](const char* name, const char* what, madeira::cli::DeadBulkArgs& args) {
    CLI::App* sub = dead->add_subcommand(name, what);
    sub->add_option("ids", args.task_ids, "task_ids");
    sub->add_flag("--all", args.all, "every dead task (narrow with --queue/--type)");
    AddOptional(sub, "--queue", args.queue, "with --all: only this queue");
    AddOptional(sub, "--type", args.task_type, "with --all: only this task_type");
    return sub;
  };
  madeira::cli::DeadBulkArgs replay_args;
  add_bulk("replay", "Replay dead tasks: IDs... or --all", replay_args)->callback([&] {
    exit_code = madeira::cli::RunDeadReplay(dead_opts, replay_args);
  });
  madeira::cli::DeadBulkArgs cancel_args;
  add_bulk("cancel", "Cancel dead tasks: IDs... or --all", cancel_args)->callback([&] {
    exit_code = madeira::cli::RunDeadCancel(dead_opts, cancel_args);
  });

  // version
  CLI::App* version = app.add_subcommand("version", "Print the version");
  version->callback([] { std::cout << "madeira " << MADEIRA_VERSION << "\n"; });

  curl_global_init(CURL_GLOBAL_DEFAULT);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    // Help is success; any other parse failure is a usage error (exit 2, like the clients).
    exit_code = rc == 0 ? 0 : madeira::cli::kExitUsage;
  }
  curl_global_cleanup();
  return exit_code;
}
