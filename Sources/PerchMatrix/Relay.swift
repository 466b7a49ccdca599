import PerchChat
import PerchHost
import PerchService

/// One bot's actions carried out on the homeserver, in the order the bot took them: it reads the
/// store's events of the bot's doing (as ``ChatService/relaySession(of:)``, which leaves out what
/// came from the server) and makes the Matrix call each one needs.
///
/// Its cursor moves past an event only once the homeserver took it (or refused it for good): an
/// outage or a restart holds the actions, which go out when the homeserver is back, each with a
/// transaction id derived from what it carries out (``RelayTransaction``), so none goes out twice.
/// A 429 is waited out for as long as the homeserver asks. A refusal (403 for lack of power, 404)
/// is logged, counted in `perch_matrix_errors_total`, and the store made to match the homeserver
/// again where it had moved ahead (a pin).
struct Relay: Sendable {
    let account: MatrixAccount
    let directory: RoomDirectory
    let service: ChatService
    let logger: HostLogger
    let metrics: HostMetrics
    /// Every bot's account's Matrix id, by its bot's uid.
    let matrixIDs: [String: String]
    /// Where the relay notes each message it sent (the sync then records nothing for it).
    let relayed: RelayedEvents

    static let connector = MatrixBackend.connector
    var uid: String { account.uid }
    var session: String { ChatService.relaySession(of: uid) }

    /// A uid as Matrix names it: a bot's account, or the person's Matrix id itself.
    func matrixID(_ uid: String) -> String { matrixIDs[uid] ?? uid }

    func run() async {
        var cursor = (try? await service.cursor(consumer: session)) ?? 0
        while !Task.isCancelled {
            do {
                let page = try await service.events(for: uid, session: session, after: cursor, limit: 64)
                // The cursor is saved once a page is carried out, not after each action: an action
                // carried out again after a crash is the same transaction, which the homeserver
                // answers with its first event.
                for event in page.events {
                    guard await carryOutUntilSettled(event) else {
                        if event.seq > cursor + 1 {
                            try? await service.acknowledge(consumer: session, seq: event.seq - 1)
                        }
                        return
                    }
                }
                if page.scannedThrough > cursor {
                    cursor = page.scannedThrough
                    try await service.acknowledge(consumer: session, seq: cursor)
                }
                if page.isFull { continue }
                await service.waitForEvents(after: cursor, for: uid, session: session)
            } catch {
                guard !Task.isCancelled else { return }
                logger.error("matrix relay of \(uid) could not read its events: \(error); retrying", ["bot": uid])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Carries out `event` until the homeserver took it or refused it for good; false when cancelled.
    func carryOutUntilSettled(_ event: ChatEvent) async -> Bool {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await carryOut(event)
                return true
            } catch let error as MatrixError {
                if error.kind == .cancelled { return false }
                metrics.increment(
                    "perch_matrix_errors_total", ["account": uid, "call": error.call, "errcode": error.metricKind])
                guard error.isTransient else {
                    logger.error(
                        "matrix refused what bot \(uid) did (\(event.name.rawValue)): \(error)",
                        ["bot": uid, "errcode": error.metricKind])
                    await reconcile(after: event)
                    return true
                }
                failures += 1
                if error.status == 429 { metrics.increment("perch_matrix_rate_limited_total", ["account": uid]) }
                if failures == 1 || failures % 10 == 0 {
                    logger.warning("matrix: \(error); bot \(uid) retries (\(failures))", ["bot": uid])
                }
                try? await Task.sleep(for: backoff(after: failures, asked: error.retryAfter))
            } catch {
                // The store failed (a full disk): the action waits like an outage.
                failures += 1
                logger.warning("matrix relay of \(uid): \(error); retrying", ["bot": uid])
                try? await Task.sleep(for: backoff(after: failures, asked: nil))
            }
        }
        return false
    }

    /// The Matrix call `event` needs, if it is this bot's doing.
    func carryOut(_ event: ChatEvent) async throws {
        switch event.name {
        case .textMessageReceived, .mediaMessageReceived, .customMessageReceived:
            guard let message = event.message, message.sender == uid else { return }
            try await send(message)
        case .messageEdited:
            guard event.actor == uid, let message = event.message else { return }
            try await edit(message, seq: event.seq)
        case .messageDeleted:
            guard event.actor == uid, let message = event.message else { return }
            try await redact(message, seq: event.seq)
        case .messagePinned, .messageUnpinned:
            guard event.actor == uid, let message = event.message else { return }
            try await setPinned(message, event.name == .messagePinned)
        case .messageReactionAdded, .messageReactionRemoved:
            guard let reaction = event.reaction, reaction.uid == uid, let message = event.message else { return }
            try await react(reaction, on: message, added: event.name == .messageReactionAdded, seq: event.seq)
        case .groupMemberKicked, .groupMemberBanned, .groupMemberUnbanned:
            guard let change = event.member, change.actor == uid, let room = directory.room(ofGroup: change.guid)
            else { return }
            let action = event.name == .groupMemberKicked ? "kick" : event.name == .groupMemberBanned ? "ban" : "unban"
            try await account.client.moderate(
                action, matrixID(change.uid), in: room, reason: action == "unban" ? nil : "by the bot \(uid)")
            metrics.increment("perch_matrix_relayed_total", ["bot": uid, "action": action])
        default:
            return
        }
    }

    /// After a refusal for good: where the store moved ahead of the homeserver (a pin), it is made
    /// to match the homeserver again.
    func reconcile(after event: ChatEvent) async {
        guard event.name == .messagePinned || event.name == .messageUnpinned, let message = event.message,
            message.receiverType == .group, let room = directory.room(ofGroup: message.receiverUid)
        else { return }
        let pinned =
            (try? await account.client.state("m.room.pinned_events", in: room))?["pinned"]?.arrayValue?
            .compactMap(\.stringValue) ?? directory.state(of: room).pinned
        _ = try? await service.mirror(
            [.pins(guid: message.receiverUid, pinned: pinned, by: uid)], connector: Self.connector)
    }
}
