import PerchChat
import PerchConfig
import PerchLock
import PerchService

/// The replies one bot's consumer has handed to the store's writer and not yet seen committed.
/// It owns every rule of a bot's queued sends; nothing else in the host queues one.
///
/// - **Order.** ``queue(_:context:callerGoesOn:onFailure:)`` hands the send to the store before it
///   returns, and the store commits sends in the order it was handed them: the replies of one lane
///   (one conversation's events, handled in order) commit in that order, while the lane goes on to
///   its next event instead of waiting for each commit. A run of replies then shares commits.
/// - **The cursor moves only past committed sends.** ``acknowledge(_:as:in:)`` waits for every send
///   queued so far to commit (or fail, which is logged) before it saves the bot's cursor. A crash
///   before then replays those events; their sends carry deterministic muids, so the replay's sends
///   are the same messages, never second copies.
/// - **`callerGoesOn`**, the one flag of the path (``ChatService/queueSend(_:as:session:callerGoesOn:)``
///   and the store take it under the same name): true while the bot has more events in hand, so
///   the store never commits on the bot's thread and the bot's work and the commit run side by side;
///   false for the last event in hand, when an idle store may commit at once on this thread (a lone
///   reply pays no thread hand-off).
/// - **How far ahead.** Sends of at most ``pagesInFlight`` handled pages may still be committing
///   while the bot reads on: ``pageHandled()`` waits for the oldest beyond that.
///
/// One consumer owns one instance; its lanes may call ``queue(_:context:callerGoesOn:onFailure:)``
/// at once, the consumer alone calls the others, between pages.
final class QueuedSends: Sendable {
    typealias Wait = @Sendable () async -> Void

    /// How many handled pages' sends may still be committing while the bot reads on.
    static let pagesInFlight = 4

    /// The waits of each handled page's sends, oldest page first; the last entry is the page being
    /// handled now.
    private let pages = Lock<[[Wait]]>([[]])

    /// Prepares `draft` as the bot's (``BotActions/prepare(_:context:)``: muid, hops, rate limits)
    /// and hands it to the store now. `onFailure` is called once if the send is refused at its
    /// commit (a group deleted meanwhile, the store closing); the commit itself is counted and
    /// observed by ``BotActions/delivered(_:)``.
    /// - Throws: what the checks that need no store throw (``BotActions/prepare(_:context:)``,
    ///   ``ChatService/queueSend(_:as:session:callerGoesOn:)``); nothing is queued then.
    func queue(
        _ draft: MessageDraft, context: BotContext, callerGoesOn: Bool,
        onFailure: @escaping @Sendable (ChatError) -> Void
    ) throws(ChatError) {
        let actions = context.actions
        let pending = try actions.service.queueSend(
            try actions.prepare(draft, context: context), as: context.bot.uid, callerGoesOn: callerGoesOn)
        // Counted and observed at its commit, not when the consumer next waits for its sends.
        pending.whenSent { actions.delivered($0) }
        let wait: Wait = {
            do throws(ChatError) {
                _ = try await pending.message
            } catch {
                onFailure(error)
            }
        }
        pages.withLock { $0[$0.count - 1].append(wait) }
    }

    /// Ends the page being handled. When more than ``pagesInFlight`` handled pages still have
    /// sends pending, waits for the oldest page's.
    func pageHandled() async {
        let oldest = pages.withLock { pages -> [Wait]? in
            pages.append([])
            guard pages.count - 1 > Self.pagesInFlight else { return nil }
            return pages.removeFirst()
        }
        for wait in oldest ?? [] { await wait() }
    }

    /// Waits for every send queued so far to commit or fail.
    func settle() async {
        let all = pages.withLock { pages -> [Wait] in
            defer { pages = [[]] }
            return pages.flatMap { $0 }
        }
        for wait in all { await wait() }
    }

    /// Saves `cursor` as `consumer`'s, once every send queued so far has committed or failed.
    /// - Throws: what ``ChatService/acknowledge(consumer:seq:)`` throws (the store closed, a full disk).
    func acknowledge(_ cursor: Int64, as consumer: String, in service: ChatService) async throws(ChatError) {
        await settle()
        try await service.acknowledge(consumer: consumer, seq: cursor)
    }
}
