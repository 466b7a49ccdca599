import Foundation
import PerchChat
import PerchConfig
import PerchSQLite
import PerchService

/// `perch send --as UID (--group GUID | --to UID) [--thread ID] [--quote ID] [--wait SECONDS] "text"`:
/// posts a message straight into the embedded service's database (a running host picks it up
/// within its poll interval) and, with `--wait`, prints every effect that followed it where the
/// sender can see it: messages (a bot's direct answer too), edits, deletions, pins, reactions,
/// member changes, thread subscriptions (``EffectDescription``).
public enum SendCommand {
    public static func run(_ parsed: ParsedArguments, print write: (String) -> Void, printError: (String) -> Void)
        async -> Int32
    {
        guard let uid = parsed.options["as"], let text = parsed.positional.first,
            (parsed.options["group"] == nil) != (parsed.options["to"] == nil)
        else {
            printError(
                "usage: perch send --as UID (--group GUID | --to UID) [--thread ID] [--quote ID] [--wait SECONDS] \"text\""
            )
            return 64
        }
        guard
            let store = LocalDatabase.open(
                configPath: parsed.options["config"] ?? "config.yaml", requireValid: true, printError: printError)
        else { return 1 }
        // Closed before the process ends, so the file is left as a clean close leaves it.
        let status = await post(text, as: uid, parsed, store: store, print: write, printError: printError)
        await store.close()
        return status
    }

    static func post(
        _ text: String, as uid: String, _ parsed: ParsedArguments, store: SQLiteChatStore,
        print write: (String) -> Void, printError: (String) -> Void
    ) async -> Int32 {
        do {
            let service = ChatService(store: store)
            let receiver: Receiver = parsed.options["group"].map(Receiver.group) ?? .user(parsed.options["to"]!)
            let draft = MessageDraft(
                to: receiver, text: text, parentMessageId: Int64(parsed.options["thread"] ?? "0") ?? 0,
                quotedMessageId: Int64(parsed.options["quote"] ?? "0") ?? 0)
            let before = try await store.latestEventSequence()
            let sent = try await service.send(draft, as: uid)
            write("sent #\(sent.id) \(EffectDescription.message(sent))")
            if let seconds = Double(parsed.options["wait"] ?? "0"), seconds > 0 {
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                let page = try await service.events(for: uid, after: before, limit: 10_000)
                for event in page.events where !(event.name.isNewMessage && event.message?.id == sent.id) {
                    if let line = EffectDescription.line(event) { write("  " + line) }
                }
            }
            return 0
        } catch let error as ChatError {
            printError("perch: \(error.code.rawValue): \(error.message)")
            return 1
        } catch {
            printError("perch: \(error)")
            return 1
        }
    }
}
