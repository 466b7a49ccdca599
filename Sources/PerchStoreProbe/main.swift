// A child process for the crash test: sends messages through the real service and store, and
// prints "ok <n> <id>" after each send has returned (so is acknowledged). The test kills it with
// SIGKILL mid-stream, reopens the database and checks every acknowledged message is there once.
@preconcurrency import Glibc
import PerchChat
import PerchSQLite
import PerchService

setvbuf(stdout, nil, _IOLBF, 0)
let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]) else {
    fputs("usage: PerchStoreProbe <database> <count>\n", stderr)
    exit(64)
}
let store = try SQLiteChatStore(path: arguments[1])
let service = ChatService(store: store)
_ = try await service.ensureUser(uid: "writer", name: "Writer")
_ = try await service.ensureUser(uid: "reader", name: "Reader")
_ = try await service.ensureGroup(guid: "crash", name: "Crash", type: .public, owner: "writer")
try await service.ensureMember(guid: "crash", uid: "reader", scope: .participant)
// Four concurrent senders, so the writer commits several sends per transaction.
await withTaskGroup(of: Void.self) { group in
    for lane in 0..<4 {
        group.addTask {
            var index = lane
            while index < count {
                let draft = MessageDraft(to: .group("crash"), text: "message \(index)", muid: "m\(index)")
                do {
                    let message = try await service.send(draft, as: "writer")
                    print("ok \(index) \(message.id)")
                } catch {
                    print("error \(index) \(error)")
                }
                index += 4
            }
        }
    }
}
await store.close()
