import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** sdk/testdata, read in place (never copied). This file runs from sdk/node/dist/test/. */
export const TESTDATA = fileURLToPath(new URL("../../../testdata/", import.meta.url));

export function testdata<T = any>(name: string): T {
  return JSON.parse(readFileSync(join(TESTDATA, name), "utf8")) as T;
}

export const MADEIRA_BIN =
  process.env.MADEIRA_BIN ?? fileURLToPath(new URL("../../../../build/madeira", import.meta.url));

/** A `madeira serve` on a free loopback port with a fresh data dir. */
export class Server {
  private constructor(
    readonly baseUrl: string,
    private readonly child: ChildProcess,
    private readonly dataDir: string,
  ) {}

  /** Starts `madeira serve`; `config` is TOML written to a file passed as --config. */
  static async start(config?: string): Promise<Server> {
    const dataDir = mkdtempSync(join(tmpdir(), "madeira-node-"));
    const args = ["serve", "--listen", "127.0.0.1:0", "--data-dir", join(dataDir, "data")];
    if (config !== undefined) {
      writeFileSync(join(dataDir, "madeira.toml"), config);
      args.push("--config", join(dataDir, "madeira.toml"));
    }
    const child = spawn(MADEIRA_BIN, args, {
      stdio: ["ignore", "pipe", "ignore"],
    });
    const firstLine = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("madeira did not print its port within 10 s")), 10_000);
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`madeira exited with ${code} before listening`)));
      createInterface({ input: child.stdout! }).once("line", (line) => {
        clearTimeout(timer);
        resolve(line);
      });
    });
    const match = /^listening on (\S+)$/.exec(firstLine);
    if (!match) throw new Error(`unexpected first line from madeira: ${firstLine}`);
    const server = new Server(`http://${match[1]}`, child, dataDir);
    child.stdout!.resume();
    await server.waitHealthy();
    return server;
  }

  private async waitHealthy(): Promise<void> {
    for (let i = 0; i < 100; i++) {
      try {
        const res = await fetch(`${this.baseUrl}/healthz`);
        if (res.ok) return;
      } catch {
        // not yet
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("madeira /healthz did not answer 200 within 5 s");
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((r) => this.child.once("exit", r));
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** Polls `check` every 50 ms until it answers true, for at most `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

export function randomQueue(prefix: string): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
}
