import PerchChat
import PerchHost
import PerchService

/// One account's `/sync` long-poll: each batch's room events become facts, recorded in the store
/// with the batch's `next_batch` in the same transaction, so a restart resumes at the first batch
/// not recorded (nothing lost, nothing recorded twice).
///
/// Each event of a room is recorded once, whichever account saw it first (the store maps its id);
/// an event a bot's account sent is left to that account's own sync, which tells it by its
/// transaction id when the bot's relay sent it (``MirroredFact/sameAs(external:local:)``).
/// Events of a first sync, and those before the account joined a room it just joined, are
/// recorded as history: the bots do not act on what came before them. Invites to mapped rooms are
/// accepted, others declined.
struct SyncLoop: Sendable {
    let account: MatrixAccount
    let directory: RoomDirectory
    let translation: EventTranslation
    let service: ChatService
    let health: AccountHealth
    let logger: HostLogger
    let metrics: HostMetrics
    let timeout: Duration
    /// The Matrix ids of every bot's account.
    let botAccounts: Set<String>
    /// The room ids (or aliases) config.yaml maps, whose invites are accepted.
    let mappedRooms: Set<String>
    /// The events the relays sent and recorded.
    let relayed: RelayedEvents

    /// How long a position with nothing recorded since may go unsaved.
    static let saveInterval = Duration.seconds(5)

    static let connector = MatrixBackend.connector

    /// The filter of every sync: room events and state only, up to 500 a room.
    static let filter =
        #"{"presence":{"not_types":["*"]},"account_data":{"not_types":["*"]},"room":{"ephemeral":{"not_types":["*"]},"account_data":{"not_types":["*"]},"timeline":{"limit":500}}}"#

    var sinceKey: String { "since:\(account.uid)" }

    func run() async {
        var since: String?
        do { since = try await service.connectorValue(sinceKey, connector: Self.connector) } catch {}
        var failures = 0
        let warnings = RepeatedWarnings(burst: 1)
        // The filter stored once (the homeserver then has nothing to parse at each sync); sent
        // whole when it cannot be stored.
        let filter = (try? await account.client.createFilter(Self.filter, for: account.matrixID)) ?? Self.filter
        let clock = ContinuousClock()
        var savedAt = clock.now
        while !Task.isCancelled {
            do {
                let answer = try await account.client.sync(since: since, timeout: timeout, filter: filter)
                guard let next = answer["next_batch"]?.stringValue else {
                    throw MatrixError(.badAnswer("no next_batch"), call: "GET /v3/sync")
                }
                let batch = await self.facts(of: answer, firstSync: since == nil)
                // What came before the bots could see it is recorded first, without events.
                if !batch.quiet.isEmpty {
                    try await service.mirror(batch.quiet, connector: Self.connector, announcing: false)
                }
                let facts = batch.live
                // A batch with nothing to record (the echo of the bot's own reply, typing, receipts)
                // moves the position in memory; it is saved with the next batch that records
                // something, or within the save interval. A restart in between reads the batch
                // again, and recording it again changes nothing.
                if !facts.isEmpty || since == nil || clock.now - savedAt > Self.saveInterval {
                    try await service.mirror(
                        facts + [.connectorValue(key: sinceKey, value: next)], connector: Self.connector)
                    savedAt = clock.now
                }
                since = next
                failures = 0
                health.synced(account.uid)
            } catch let error as MatrixError {
                guard !Task.isCancelled, error.kind != .cancelled else { break }
                failures += 1
                if error.status == 429 {
                    metrics.increment("perch_matrix_rate_limited_total", ["account": account.uid])
                }
                metrics.increment(
                    "perch_matrix_errors_total",
                    ["account": account.uid, "call": "GET /v3/sync", "errcode": error.metricKind])
                health.failing(account.uid, "cannot sync: \(error)")
                if let more = warnings.suffix(error.metricKind, at: BotHost.uptime()) {
                    logger.warning(
                        "matrix sync of \(account.uid) failed: \(error); retrying\(more)", ["bot": account.uid])
                }
                try? await Task.sleep(for: backoff(after: failures, asked: error.retryAfter))
            } catch {
                guard !Task.isCancelled else { break }
                failures += 1
                health.failing(account.uid, "cannot record its sync: \(error)")
                logger.error(
                    "matrix sync of \(account.uid) could not be recorded: \(error); retrying", ["bot": account.uid])
                try? await Task.sleep(for: backoff(after: failures, asked: nil))
            }
        }
    }

    /// One sync answer's facts: `quiet`, what came before the bots could see it (recorded without
    /// events: a first sync, a room's history up to the account's join), and `live`.
    struct Batch {
        var quiet: [MirroredFact] = []
        var live: [MirroredFact] = []
    }

    /// The facts of one sync answer; accepts and declines its invites on the way.
    func facts(of answer: JSONValue, firstSync: Bool) async -> Batch {
        var batch = Batch()
        let joined = answer.at("rooms", "join")?.objectValue ?? [:]
        var events = 0
        for room in joined.keys.sorted() {
            guard let place = directory.place(of: room), let body = joined[room] else { continue }
            // The state before the timeline (a room just joined, or a gap): applied, not announced.
            for json in body.at("state", "events")?.arrayValue ?? [] {
                guard let event = MatrixEvent(json) else { continue }
                directory.withState(of: room) { $0.apply(event) }
            }
            let timeline = (body.at("timeline", "events")?.arrayValue ?? []).compactMap(MatrixEvent.init)
            events += timeline.count
            // In a room this account just joined, what came before its join is history.
            let joinIndex = timeline.lastIndex {
                $0.type == "m.room.member" && $0.stateKey == account.matrixID
                    && $0.content["membership"]?.stringValue == "join" && $0.sender == account.matrixID
            }
            // A mapped room the account has just joined becomes its group, with the members its
            // state names, before anything happens in it.
            if joinIndex != nil, case .group(let guid) = place {
                batch.quiet += directory.withState(of: room) { state in
                    [translation.group(guid, state)] + translation.people(of: state)
                        + [.memberList(guid: guid, members: translation.members(of: state))]
                }
            }
            for (index, event) in timeline.enumerated() {
                let history = firstSync || (joinIndex.map { index < $0 } ?? false)
                if botAccounts.contains(event.sender), event.sender != account.matrixID {
                    // Another bot's doing: its own sync records it; the room's state still moves.
                    if event.stateKey != nil { directory.withState(of: room) { $0.apply(event) } }
                    continue
                }
                if event.sender == account.matrixID, let transaction = event.transaction,
                    let local = RelayTransaction.message(transaction)
                {
                    // The relay records the id when the homeserver answers its send: only a send whose
                    // answer was lost (a crash, a timeout) is left for this fact to map.
                    if !relayed.contains(event.id) { batch.live.append(.sameAs(external: event.id, local: local)) }
                    continue
                }
                let facts = directory.withState(of: room) { state in
                    translation.facts(of: event, in: place, state: &state, history: history)
                }
                if history { batch.quiet += facts } else { batch.live += facts }
            }
        }
        if events > 0 {
            metrics.increment("perch_matrix_synced_events_total", ["account": account.uid], by: Double(events))
        }
        await answerInvites(answer.at("rooms", "invite")?.objectValue ?? [:])
        return batch
    }

    /// Joins the mapped rooms this account is invited to; declines the others, saying so.
    func answerInvites(_ invites: [String: JSONValue]) async {
        for room in invites.keys.sorted() {
            let aliases = (invites[room]?.at("invite_state", "events")?.arrayValue ?? []).compactMap { event in
                event["type"]?.stringValue == "m.room.canonical_alias" ? event.at("content", "alias")?.stringValue : nil
            }
            do {
                if directory.place(of: room) != nil || mappedRooms.contains(room)
                    || aliases.contains(where: mappedRooms.contains)
                {
                    _ = try await account.client.join(room)
                    logger.info("matrix: joined a mapped room on invite", ["bot": account.uid, "room": room])
                } else {
                    try await account.client.leave(room, reason: "this bot only joins the rooms its configuration maps")
                    logger.info(
                        "matrix: declined an invite to a room config.yaml does not map",
                        ["bot": account.uid, "room": room])
                }
            } catch {
                logger.warning("matrix: could not answer the invite to \(room): \(error)", ["bot": account.uid])
            }
        }
    }
}

/// The transaction ids a relay sends with: derived from what it sends, so a send repeated after a
/// crash is the same transaction, and the homeserver answers it with the first event.
enum RelayTransaction {
    /// A local message's send.
    static func message(_ id: Int64) -> String { "perch-m\(id)" }

    /// The local message a message's transaction id names, if it is one.
    static func message(_ transaction: String) -> Int64? {
        transaction.hasPrefix("perch-m") ? Int64(transaction.dropFirst("perch-m".count)) : nil
    }

    /// Any other action, by the local event it carries out (`kind`: e edit, d delete, r reaction).
    static func action(_ kind: String, event seq: Int64) -> String { "perch-\(kind)\(seq)" }
}
