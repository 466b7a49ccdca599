import PerchChat

/// Cuts chains of bots answering bots: every bot message carries `metadata.perch.hops`.
enum LoopGuard {
    /// The most hops a message's metadata is taken to record: anyone may write any number there.
    static let recordedCeiling = 1_000_000

    /// How many bot hops led to `message`: its recorded count (a fraction rounded down, held to
    /// 0...``recordedCeiling``), 1 for a bot message without one, 0 for a person's.
    static func hops(of message: Message?, senderIsBot: Bool) -> Int {
        guard let message else { return 0 }
        if case .number(let hops)? = message.metadata?["perch"]?["hops"] {
            guard !hops.isNaN else { return 0 }
            return Int(min(max(hops, 0), Double(recordedCeiling)).rounded(.down))
        }
        return senderIsBot ? 1 : 0
    }

    static func outgoingHops(for context: BotContext) -> Int {
        hops(of: context.message, senderIsBot: context.sender?.isBot ?? false) + 1
    }
}
