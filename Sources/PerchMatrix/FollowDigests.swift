import Foundation
import PerchChat
import PerchHost
import PerchService

/// The replies of followed threads, brought to their followers: Matrix lets an account subscribe
/// only itself to a thread (MSC4306), so Perch keeps its own follow list (the store's thread
/// subscriptions, with the embedded service's rules: starting a thread, replying in it or being
/// mentioned there follows it; `!unfollow` stops until the next of those) and sends each follower
/// the new replies of a thread as a direct message from the follow bot: the replies that come
/// within `matrix.followDigestSeconds` of the first one, in one message, each with a link to it.
///
/// The digest's cursor stays before the oldest reply not yet delivered, so a restart delivers what
/// was waiting (each digest's muid is fixed by its follower, thread and first reply: sent once).
struct FollowDigests: Sendable {
    /// The follow bot's uid: the digests come from it, and it reads the replies as itself.
    let bot: String
    let bots: Set<String>
    let window: Duration
    let directory: RoomDirectory
    let service: ChatService
    let logger: HostLogger
    let metrics: HostMetrics

    static let connector = MatrixBackend.connector
    var session: String { "digest:\(bot)" }

    /// Replies waiting for one follower in one thread.
    struct Pending {
        var replies: [Message] = []
        var firstSeq: Int64
        var due: ContinuousClock.Instant
    }

    func run() async {
        var cursor = (try? await service.cursor(consumer: session)) ?? 0
        var pending: [String: Pending] = [:]
        let clock = ContinuousClock()
        while !Task.isCancelled {
            do {
                let page = try await service.events(for: bot, session: session, after: cursor, limit: 256)
                for event in page.events {
                    guard event.name.isNewMessage, let reply = event.message, reply.isReply,
                        !bots.contains(reply.sender)
                    else { continue }
                    for follower in try await service.threadSubscribers(of: reply.parentMessageId)
                    where follower != reply.sender && !bots.contains(follower) {
                        let key = "\(follower)\u{1F}\(reply.parentMessageId)"
                        pending[key, default: Pending(firstSeq: event.seq, due: clock.now + window)].replies.append(
                            reply)
                    }
                }
                cursor = max(cursor, page.scannedThrough)
                for key in pending.keys.sorted() where pending[key]!.due <= clock.now {
                    try await deliver(key, pending[key]!)
                    pending[key] = nil
                }
                // Saved only past what has been delivered.
                let held = pending.values.map { $0.firstSeq - 1 }.min() ?? cursor
                try await service.acknowledge(consumer: session, seq: min(held, cursor))
                if page.isFull { continue }
                let next = pending.values.map(\.due).min()
                let (after, service, bot, session) = (cursor, service, bot, session)
                let wait = Task { await service.waitForEvents(after: after, for: bot, session: session) }
                if let next {
                    let timer = Task {
                        try? await Task.sleep(until: next, clock: clock)
                        wait.cancel()
                    }
                    await wait.value
                    timer.cancel()
                } else {
                    await withTaskCancellationHandler {
                        await wait.value
                    } onCancel: {
                        wait.cancel()
                    }
                }
            } catch {
                guard !Task.isCancelled else { return }
                logger.warning("matrix: the follow digests failed: \(error); retrying", ["bot": bot])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Sends one follower a thread's waiting replies, unless they stopped following it.
    func deliver(_ key: String, _ waiting: Pending) async throws {
        let parts = key.split(separator: "\u{1F}")
        guard let root = Int64(parts[1]) else { return }
        let follower = String(parts[0])
        guard try await service.threadSubscribers(of: root).contains(follower),
            let parent = try await service.storedMessage(root)
        else { return }
        var lines: [String] = []
        let room = directory.room(ofGroup: parent.receiverUid)
        for reply in waiting.replies {
            let name = (try? await service.user(reply.sender).name) ?? reply.sender
            let text = (reply.text ?? reply.attachments.first?.name ?? "").prefix(300)
            var line = "• \(name): \(text)"
            if let room, let event = try await service.externalId(ofMessage: reply.id, connector: Self.connector) {
                line += "\n  https://matrix.to/#/\(room)/\(event)"
            }
            lines.append(line)
        }
        let group =
            parent.receiverType == .group
            ? " in \((try? await service.group(parent.receiverUid, as: bot).name) ?? parent.receiverUid)" : ""
        let topic = (parent.text ?? "").prefix(80)
        let count = waiting.replies.count
        let text =
            "\(count == 1 ? "A new reply" : "\(count) new replies") in a thread you follow\(group) (“\(topic)”):\n"
            + lines.joined(separator: "\n")
        _ = try await service.send(
            MessageDraft(
                to: .user(follower), text: text,
                muid: "perch:digest:\(follower):\(root):\(waiting.replies[0].id)"),
            as: bot)
        metrics.increment("perch_matrix_follow_digests_total")
    }
}
