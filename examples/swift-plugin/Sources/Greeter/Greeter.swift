import PerchHost

/// Greets whoever says `!hello` by name, and counts how many times each person was greeted in
/// the bot's storage. Its bot file's entry configures the greeting:
///
/// ```yaml
/// plugins:
///   - name: greeter
///     config: { greeting: "Welcome", excited: true }
/// ```
public struct Greeter: BotPlugin {
    public static let name = "greeter"

    /// The plugin's `config:`, decoded with located findings by `perch check`: a key it does not
    /// know, or a value of the wrong type, is an error at its line.
    public struct Configuration: Decodable, Sendable {
        /// `greeting` (required): the word before the name.
        public var greeting: String
        /// `excited` (default false): end with "!".
        public var excited: Bool?
    }

    let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// A rule's `plugin: greeter` action.
    public func handle(_ context: BotContext) async throws {
        guard let sender = context.sender else { return }
        let seen = Int(try await context.storage.value(for: sender.uid) ?? "0") ?? 0
        try await context.storage.set(String(seen + 1), for: sender.uid)
        let mark = configuration.excited == true ? "!" : "."
        let again = seen == 0 ? "" : " (\(seen + 1) times now)"
        try await context.reply("\(configuration.greeting), \(sender.name)\(mark)\(again)")
    }
}
