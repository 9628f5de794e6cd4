// Conformance cases for webhooks: endpoints, events and the delivery tasks they fan out to.
#include <future>
#include <map>
#include <tuple>

#include "store/conformance/store_conformance.h"
#include "store/conformance/sync.h"

namespace madeira::store::testing {

using core::ErrorCode;
using core::TaskStatus;

namespace {

constexpr const char* kDeliveryType = "webhook.delivery";

EndpointRecord Endpoint(const std::string& id, Millis created_at) {
  return {id, R"({"url":"https://example.com/)" + id + R"("})", created_at, created_at};
}

EventRecord Event(const std::string& source, const std::string& event_id,
                  Millis received_at = kT0) {
  return {source,
          event_id,
          "payment.succeeded",
          R"({"order":")" + event_id + R"("})",
          "trace-" + event_id,
          std::nullopt,
          received_at};
}

// The delivery of an event to one endpoint: a task in the endpoint's queue.
NewDelivery Delivery(const std::string& task_id, const std::string& endpoint_id,
                     Millis schedule_time = kT0) {
  core::TaskSpec s;
  s.task_id = task_id;
  s.task_type = kDeliveryType;
  s.queue = "webhook:" + endpoint_id;
  s.payload = R"({"delivery":")" + task_id + R"("})";
  s.schedule_time = schedule_time;
  s.trace_id = "trace-" + task_id;
  s.content_hash = "hash-" + task_id;
  return {endpoint_id, std::move(s)};
}

std::vector<std::string> EndpointIds(const std::vector<EndpointRecord>& endpoints) {
  std::vector<std::string> ids;
  for (const auto& e : endpoints) ids.push_back(e.endpoint_id);
  return ids;
}

// (endpoint_id, task_id, status) of each delivery, in order.
using DeliveryRow = std::tuple<std::string, std::string, TaskStatus>;
std::vector<DeliveryRow> Rows(const StoredEvent& stored) {
  std::vector<DeliveryRow> rows;
  for (const auto& d : stored.deliveries) rows.emplace_back(d.endpoint_id, d.task_id, d.status);
  return rows;
}

Result<Unit> Put(Store& store, const EndpointRecord& endpoint) {
  return Await<Unit>([&](auto done) { store.PutEndpoint(endpoint, done); });
}
Result<EndpointRecord> GetEndpoint(Store& store, const std::string& id) {
  return Await<EndpointRecord>([&](auto done) { store.GetEndpoint(id, done); });
}
std::vector<EndpointRecord> ListEndpoints(Store& store) {
  return Await<std::vector<EndpointRecord>>([&](auto done) { store.ListEndpoints(done); }).value();
}
Result<EventSubmitOutcome> SubmitEvent(Store& store, const EventRecord& event,
                                       const std::vector<NewDelivery>& deliveries,
                                       Millis now = kT0) {
  return Await<EventSubmitOutcome>(
      [&](auto done) { store.SubmitEvent(event, deliveries, now, done); });
}
Result<StoredEvent> AddDeliveries(Store& store, const std::string& source,
                                  const std::string& event_id,
                                  const std::vector<NewDelivery>& deliveries, Millis now = kT0) {
  return Await<StoredEvent>(
      [&](auto done) { store.AddDeliveries(source, event_id, deliveries, now, done); });
}
Result<StoredEvent> GetEvent(Store& store, const std::string& event_id,
                             std::optional<std::string> source = std::nullopt) {
  return Await<StoredEvent>([&](auto done) { store.GetEvent(event_id, source, done); });
}

}  // namespace

TEST_P(StoreConformance, EndpointsArePutReadListedReplacedAndDeleted) {
  ASSERT_TRUE(Put(store(), Endpoint("ep_1", kT0)));
  ASSERT_TRUE(Put(store(), Endpoint("ep_2", kT0 + 1)));
  ASSERT_TRUE(Put(store(), Endpoint("ep_3", kT0 + 2)));
  auto got = GetEndpoint(store(), "ep_2");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->config, Endpoint("ep_2", 0).config);
  EXPECT_EQ(got->created_at, kT0 + 1);
  EXPECT_EQ(EndpointIds(ListEndpoints(store())),
            (std::vector<std::string>{"ep_1", "ep_2", "ep_3"}));

  // A replace (PATCH) changes the config and keeps the endpoint's place: it is still the oldest.
  EndpointRecord patched = Endpoint("ep_1", kT0);
  patched.config = R"({"url":"https://example.com/moved"})";
  patched.updated_at = kT0 + 50;
  ASSERT_TRUE(Put(store(), patched));
  got = GetEndpoint(store(), "ep_1");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->config, patched.config);
  EXPECT_EQ(got->created_at, kT0);
  EXPECT_EQ(got->updated_at, kT0 + 50);
  auto listed = ListEndpoints(store());
  EXPECT_EQ(EndpointIds(listed), (std::vector<std::string>{"ep_1", "ep_2", "ep_3"}));
  EXPECT_EQ(listed.at(0).config, patched.config);

  ASSERT_TRUE(Await<Unit>([&](auto done) { store().DeleteEndpoint("ep_2", done); }));
  EXPECT_EQ(GetEndpoint(store(), "ep_2").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(Await<Unit>([&](auto done) { store().DeleteEndpoint("ep_2", done); }).error().code,
            ErrorCode::kNotFound);
  EXPECT_EQ(GetEndpoint(store(), "nope").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(EndpointIds(ListEndpoints(store())), (std::vector<std::string>{"ep_1", "ep_3"}));

  Reopen();
  listed = ListEndpoints(store());
  EXPECT_EQ(EndpointIds(listed), (std::vector<std::string>{"ep_1", "ep_3"}));
  EXPECT_EQ(listed.at(0).config, patched.config);
  EXPECT_EQ(listed.at(0).updated_at, kT0 + 50);
}

TEST_P(StoreConformance, EventFansOutToLeasableDeliveryTasks) {
  EventRecord event = Event("shop", "evt_1", kT0 + 5);
  event.target_uri = "https://example.com/only";
  auto outcome = SubmitEvent(
      store(), event,
      {Delivery("d1", "ep_1"), Delivery("d2", "ep_2"), Delivery("d3", "ep_3", kT0 + 60'000)},
      kT0 + 5);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_FALSE(outcome->duplicate);
  EXPECT_EQ(outcome->stored.event.payload, event.payload);
  EXPECT_EQ(Rows(outcome->stored), (std::vector<DeliveryRow>{
                                       {"ep_1", "d1", TaskStatus::kPending},
                                       {"ep_2", "d2", TaskStatus::kPending},
                                       {"ep_3", "d3", TaskStatus::kScheduled},
                                   }));

  // The deliveries are tasks like any other: in their endpoint's queue, counted, leasable.
  core::Task d1 = Get("d1");
  EXPECT_EQ(d1.spec.queue, "webhook:ep_1");
  EXPECT_EQ(d1.spec.task_type, kDeliveryType);
  EXPECT_EQ(Get("d3").status, TaskStatus::kScheduled);
  using Key = std::pair<std::string, TaskStatus>;
  EXPECT_EQ(DepthMap(), (std::map<Key, int64_t>{{{"webhook:ep_1", TaskStatus::kPending}, 1},
                                                {{"webhook:ep_2", TaskStatus::kPending}, 1},
                                                {{"webhook:ep_3", TaskStatus::kScheduled}, 1}}));
  LeaseBatch batch = LeaseFrom({"webhook:ep_2"}, 10, kT0 + 6, {{kDeliveryType, {1}}});
  EXPECT_EQ(LeasedIds(batch), (std::vector<std::string>{"d2"}));

  auto stored = GetEvent(store(), "evt_1", "shop");
  ASSERT_TRUE(stored);
  const EventRecord& e = stored->event;
  EXPECT_EQ(e.source, "shop");
  EXPECT_EQ(e.event_id, "evt_1");
  EXPECT_EQ(e.event_type, "payment.succeeded");
  EXPECT_EQ(e.payload, event.payload);
  EXPECT_EQ(e.trace_id, "trace-evt_1");
  EXPECT_EQ(e.target_uri, "https://example.com/only");
  EXPECT_EQ(e.received_at, kT0 + 5);
  EXPECT_EQ(Rows(*stored), (std::vector<DeliveryRow>{
                               {"ep_1", "d1", TaskStatus::kPending},
                               {"ep_2", "d2", TaskStatus::kRunning},
                               {"ep_3", "d3", TaskStatus::kScheduled},
                           }));
}

// The sender retried the event: the answer is the stored one and no second delivery happens.
TEST_P(StoreConformance, DuplicateEventWritesNothing) {
  ASSERT_TRUE(SubmitEvent(store(), Event("shop", "evt_1"), {Delivery("d1", "ep_1")}));
  EventRecord again = Event("shop", "evt_1", kT0 + 100);
  again.payload = R"({"order":"changed"})";
  auto outcome = SubmitEvent(store(), again, {Delivery("d1-again", "ep_1")}, kT0 + 100);
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->duplicate);
  EXPECT_EQ(outcome->stored.event.payload, Event("shop", "evt_1").payload);
  EXPECT_EQ(outcome->stored.event.received_at, kT0);
  EXPECT_EQ(Rows(outcome->stored),
            (std::vector<DeliveryRow>{{"ep_1", "d1", TaskStatus::kPending}}));
  EXPECT_EQ(TryGet("d1-again").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(LeasedIds(LeaseFrom({"webhook:ep_1"}, 10)), (std::vector<std::string>{"d1"}));
  auto stored = GetEvent(store(), "evt_1", "shop");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->event.payload, Event("shop", "evt_1").payload);
  EXPECT_EQ(stored->deliveries.size(), 1u);
}

// A delivery whose task_id is taken fails the whole event, even after earlier deliveries were
// written; events queued right around it (likely in the same transaction) still land.
TEST_P(StoreConformance, ConflictingDeliveryTaskIdWritesNothing) {
  core::TaskSpec taken = Spec("taken");
  taken.content_hash = "other content";
  SubmitOne(taken);
  std::promise<Result<EventSubmitOutcome>> before;
  std::promise<Result<EventSubmitOutcome>> conflicting;
  std::promise<Result<EventSubmitOutcome>> after;
  store().SubmitEvent(Event("shop", "before"), {Delivery("d-before", "ep_1")}, kT0,
                      [&](Result<EventSubmitOutcome> r) { before.set_value(std::move(r)); });
  store().SubmitEvent(Event("shop", "evt_bad"),
                      {Delivery("d-fresh", "ep_1"), Delivery("taken", "ep_2")}, kT0,
                      [&](Result<EventSubmitOutcome> r) { conflicting.set_value(std::move(r)); });
  store().SubmitEvent(Event("shop", "after"), {Delivery("d-after", "ep_1")}, kT0,
                      [&](Result<EventSubmitOutcome> r) { after.set_value(std::move(r)); });
  ASSERT_TRUE(before.get_future().get());
  auto refused = conflicting.get_future().get();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kTaskIdConflict);
  ASSERT_TRUE(after.get_future().get());

  EXPECT_EQ(GetEvent(store(), "evt_bad").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(TryGet("d-fresh").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(Get("taken").spec.queue, "q");  // the existing task is untouched
  using Key = std::pair<std::string, TaskStatus>;
  const std::map<Key, int64_t> want{{{"q", TaskStatus::kPending}, 1},
                                    {{"webhook:ep_1", TaskStatus::kPending}, 2}};
  EXPECT_EQ(DepthMap(), want);
  EXPECT_EQ(LeasedIds(LeaseFrom({"webhook:ep_1"}, 10)),
            (std::vector<std::string>{"d-before", "d-after"}));
  // The event was not stored, so the sender's retry with fresh task ids goes through.
  auto retried = SubmitEvent(store(), Event("shop", "evt_bad"), {Delivery("d-retry", "ep_1")});
  ASSERT_TRUE(retried);
  EXPECT_FALSE(retried->duplicate);
  Reopen();
  EXPECT_EQ(TryGet("d-fresh").error().code, ErrorCode::kNotFound);
  EXPECT_EQ((DepthMap()[{"webhook:ep_2", TaskStatus::kPending}]), 0);
}

TEST_P(StoreConformance, EventDeliveryStatusFollowsItsTask) {
  ASSERT_TRUE(SubmitEvent(store(), Event("shop", "evt_1"),
                          {Delivery("d1", "ep_1"), Delivery("d2", "ep_2")}));
  auto statuses = [&] {
    std::vector<TaskStatus> s;
    for (const auto& d : GetEvent(store(), "evt_1").value().deliveries) s.push_back(d.status);
    return s;
  };
  LeaseBatch first = LeaseFrom({"webhook:ep_1"}, 1, kT0 + 1);
  ASSERT_EQ(first.leases.size(), 1u);
  LeaseBatch second = LeaseFrom({"webhook:ep_2"}, 1, kT0 + 1);
  ASSERT_EQ(second.leases.size(), 1u);
  EXPECT_EQ(statuses(), (std::vector<TaskStatus>{TaskStatus::kRunning, TaskStatus::kRunning}));
  ASSERT_TRUE(Ack(first.leases[0].lease_id, kT0 + 2));
  ASSERT_TRUE(Fail(second.leases[0].lease_id, Backoff(kT0 + 1'000), kT0 + 2));
  EXPECT_EQ(statuses(), (std::vector<TaskStatus>{TaskStatus::kSucceeded, TaskStatus::kRetrying}));
}

TEST_P(StoreConformance, GetEventWithoutSourceTakesTheOneReceivedLast) {
  ASSERT_TRUE(SubmitEvent(store(), Event("shop", "evt_1", kT0 + 10), {Delivery("d-shop", "ep_1")},
                          kT0 + 10));
  ASSERT_TRUE(SubmitEvent(store(), Event("bank", "evt_1", kT0 + 20), {Delivery("d-bank", "ep_1")},
                          kT0 + 20));
  ASSERT_TRUE(SubmitEvent(store(), Event("shop", "evt_2", kT0 + 30), {}, kT0 + 30));
  auto newest = GetEvent(store(), "evt_1");
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->event.source, "bank");
  EXPECT_EQ(Rows(*newest), (std::vector<DeliveryRow>{{"ep_1", "d-bank", TaskStatus::kPending}}));
  auto shop = GetEvent(store(), "evt_1", "shop");
  ASSERT_TRUE(shop);
  EXPECT_EQ(shop->event.source, "shop");
  EXPECT_EQ(Rows(*shop), (std::vector<DeliveryRow>{{"ep_1", "d-shop", TaskStatus::kPending}}));
  auto without_deliveries = GetEvent(store(), "evt_2");
  ASSERT_TRUE(without_deliveries);
  EXPECT_TRUE(without_deliveries->deliveries.empty());
  EXPECT_EQ(GetEvent(store(), "evt_3").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(GetEvent(store(), "evt_2", "bank").error().code, ErrorCode::kNotFound);
}

// A redelivery appends new tasks to the event; one for an event never stored is refused whole.
TEST_P(StoreConformance, AddDeliveriesAppendsToTheStoredEvent) {
  ASSERT_TRUE(SubmitEvent(store(), Event("shop", "evt_1"), {Delivery("d1", "ep_1")}));
  ASSERT_TRUE(Ack(LeaseFrom({"webhook:ep_1"}, 1).leases.at(0).lease_id));
  auto added = AddDeliveries(store(), "shop", "evt_1",
                             {Delivery("d2", "ep_1"), Delivery("d3", "ep_2")}, kT0 + 10);
  ASSERT_TRUE(added) << added.error().message;
  const std::vector<DeliveryRow> want{{"ep_1", "d1", TaskStatus::kSucceeded},
                                      {"ep_1", "d2", TaskStatus::kPending},
                                      {"ep_2", "d3", TaskStatus::kPending}};
  EXPECT_EQ(Rows(*added), want);
  EXPECT_EQ(added->event.payload, Event("shop", "evt_1").payload);
  EXPECT_EQ(Rows(GetEvent(store(), "evt_1").value()), want);
  EXPECT_EQ(LeasedIds(LeaseFrom({"webhook:ep_1"}, 10, kT0 + 10)), (std::vector<std::string>{"d2"}));

  auto unknown = AddDeliveries(store(), "bank", "evt_1", {Delivery("d4", "ep_1")});
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(TryGet("d4").error().code, ErrorCode::kNotFound);
  // A taken task_id refuses the whole redelivery, even with the same content: a task belongs to
  // one delivery.
  auto taken =
      AddDeliveries(store(), "shop", "evt_1", {Delivery("d5", "ep_3"), Delivery("d1", "ep_1")});
  EXPECT_FALSE(taken);
  EXPECT_EQ(TryGet("d5").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(Rows(GetEvent(store(), "evt_1", "shop").value()).size(), 3u);
}

TEST_P(StoreConformance, EndpointsAndEventsSurviveCloseAndReopen) {
  ASSERT_TRUE(Put(store(), Endpoint("ep_1", kT0)));
  ASSERT_TRUE(SubmitEvent(store(), Event("shop", "evt_1"),
                          {Delivery("d1", "ep_1"), Delivery("d2", "ep_1")}));
  ASSERT_TRUE(Ack(LeaseFrom({"webhook:ep_1"}, 1).leases.at(0).lease_id));
  ASSERT_TRUE(AddDeliveries(store(), "shop", "evt_1", {Delivery("d3", "ep_1")}, kT0 + 1));
  Reopen();
  auto endpoint = GetEndpoint(store(), "ep_1");
  ASSERT_TRUE(endpoint);
  EXPECT_EQ(endpoint->config, Endpoint("ep_1", kT0).config);
  EXPECT_EQ(EndpointIds(ListEndpoints(store())), (std::vector<std::string>{"ep_1"}));
  auto stored = GetEvent(store(), "evt_1");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->event.payload, Event("shop", "evt_1").payload);
  EXPECT_EQ(stored->event.received_at, kT0);
  EXPECT_EQ(Rows(*stored), (std::vector<DeliveryRow>{{"ep_1", "d1", TaskStatus::kSucceeded},
                                                     {"ep_1", "d2", TaskStatus::kPending},
                                                     {"ep_1", "d3", TaskStatus::kPending}}));
  // The event is still known as received: a retry by the sender is a duplicate.
  auto again = SubmitEvent(store(), Event("shop", "evt_1"), {Delivery("d9", "ep_1")});
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(LeasedIds(LeaseFrom({"webhook:ep_1"}, 10, kT0 + 1)),
            (std::vector<std::string>{"d2", "d3"}));
}

}  // namespace madeira::store::testing
