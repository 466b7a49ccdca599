import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchService
import PerchTestSupport
import PerchTesting
import Synchronization
import Testing

@Suite struct SafetyTests {
    @Test func aBotNeverReactsToItself() async throws {
        let rules = """
              - on: message
                do: [{ reply: "heard {message.text}" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            try await chat.post("once", as: "carol", to: .group("room"))
            #expect(try await chat.botMessages(in: .group("room")).compactMap(\.text) == ["heard once"])
        }
    }

    @Test func chainsOfBotsAreCutAfterTheConfiguredHops() async throws {
        let ping = """
            name: ping
            user: { uid: pingbot, name: Ping }
            groups: [room]
            rules:
              - on: message
                do: [{ reply: "ping" }]
            """
        let pong = """
            name: pong
            user: { uid: pongbot, name: Pong }
            groups: [room]
            rules:
              - on: message
                do: [{ reply: "pong" }]
            """
        let config = hostConfig + "\nlimits:\n  botHops: 3\n"
        try await withTestHost(config: config, bots: ["ping.yaml": ping, "pong.yaml": pong]) { chat in
            try await chat.post("start", as: "carol", to: .group("room"))
            try await Task.sleep(for: .milliseconds(300))
            try await chat.settle()
            let fromBots = try await chat.messages(in: .group("room")).filter { $0.sender != "carol" }
            // carol → 2 replies (hop 1), each answered by the other bot (hop 2), then hop 3; then cut.
            #expect(fromBots.count == 6)
            let hops = fromBots.compactMap { message -> Int? in
                if case .number(let value)? = message.metadata?["perch"]?["hops"] { return Int(value) }
                return nil
            }
            #expect(hops.sorted() == [1, 1, 2, 2, 3, 3])
            let cut =
                chat.host.metrics.value("perch_bot_loops_cut_total", ["bot": "ping"])
                + chat.host.metrics.value("perch_bot_loops_cut_total", ["bot": "pong"])
            #expect(cut == 2)
        }
    }

    /// A chain through reactions is cut as one through messages: a bot thanking for every reaction
    /// and one reacting 👀 to every message would otherwise answer each other for ever (a reaction
    /// carries no hops of its own: it counts those of the message reacted to, and a bot's).
    @Test func chainsThroughReactionsAreCutToo() async throws {
        let thanks = """
            name: thanks
            user: { uid: thanksbot, name: Thanks }
            groups: [room]
            rules:
              - on: reaction_added
                do: [{ reply: "thanks {sender.uid}" }]
            """
        let eyes = """
            name: eyes
            user: { uid: eyesbot, name: Eyes }
            groups: [room]
            rules:
              - on: message
                do: [{ react: "👀" }]
            """
        let config = hostConfig + "\nlimits:\n  botHops: 3\n"
        try await withTestHost(config: config, bots: ["thanks.yaml": thanks, "eyes.yaml": eyes]) { chat in
            let start = try await chat.post("start", as: "carol", to: .group("room"))
            try await Task.sleep(for: .milliseconds(300))
            try await chat.settle()
            let fromBots = try await chat.messages(in: .group("room")).filter { $0.sender == "thanksbot" }
            // eyes reacts to start; thanks answers (hop 2: a bot's doing on a person's message);
            // eyes reacts to that; thanks answers (hop 3); eyes is cut there.
            #expect(fromBots.compactMap(\.text) == ["thanks eyesbot", "thanks eyesbot"])
            #expect(try await chat.service.message(start.id, as: "carol").reactions.map(\.reaction) == ["👀"])
            #expect(try await chat.service.message(fromBots[0].id, as: "carol").reactions.map(\.reaction) == ["👀"])
            #expect(try await chat.service.message(fromBots[1].id, as: "carol").reactions.isEmpty)
            #expect(chat.host.metrics.value("perch_bot_loops_cut_total", ["bot": "eyes"]) == 1)
        }
    }

    /// A message's `metadata.perch.hops` is whatever its sender wrote: a number past `Int`'s range
    /// trapped the host when a bot answered it (1e300 from any person's client stopped every bot).
    @Test func aMessageClaimingAnyHopCountIsAnsweredWithoutCrashingTheHost() async throws {
        let rules = """
              - on: message
                do: [{ reply: "heard {message.text}" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let claims: [(text: String, hops: Double)] = [("huge", 1e300), ("negative", -1e300), ("half", 2.5)]
            for claim in claims {
                let metadata = JSONValue.object(["perch": .object(["hops": .number(claim.hops)])])
                _ = try await chat.service.send(
                    MessageDraft(to: .group("room"), text: claim.text, metadata: metadata), as: "carol")
            }
            let replies = try await chat.botMessages(in: .group("room"))
            #expect(replies.compactMap(\.text) == ["heard huge", "heard negative", "heard half"])
            let hops = replies.map { reply -> Double? in
                if case .number(let value)? = reply.metadata?["perch"]?["hops"] { return value }
                return nil
            }
            #expect(hops == [1_000_001, 1, 3])
            #expect(await chat.host.state == .running)
        }
    }

    @Test func rateLimitsDropAndCountTheExcess() async throws {
        let rules = """
              - on: message
                do: [{ reply: "ok" }]
            """
        let bot = botFile(rules, extra: "rate_limit: { per_minute: 1, burst: 2, per_conversation_per_minute: 60 }")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
            for index in 0..<14 { try await chat.post("m\(index)", as: "carol", to: .group("room")) }
            #expect(try await chat.botMessages(in: .group("room")).count == 2)
            #expect(chat.host.metrics.value("perch_rate_limited_actions_total", ["bot": "b"]) == 12)
            // Twelve drops in a row are ten lines, a minute's burst: a refused action repeats at
            // every message heard, and the log must not repeat with it.
            #expect(await chat.log.filter { $0.contains("ERR_TOO_MANY_REQUESTS") }.count == 10)
        }
    }

    /// A raid outruns the rate limits, the moderator does not: every listed message is deleted
    /// while the warnings it would send are held to the limit.
    @Test func moderationIsNotHeldBackByTheRateLimits() async throws {
        let rules = """
              - on: message
                when: { contains_words: [spamword] }
                do: [delete, { reply: "removed" }]
            """
        let bot = botFile(rules, extra: "rate_limit: { per_minute: 600, burst: 3, per_conversation_per_minute: 3 }")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
            var posted: [Int64] = []
            for index in 0..<12 {
                posted.append(try await chat.post("spamword \(index)", as: "carol", to: .group("room")).id)
            }
            try await chat.settle()
            for id in posted { #expect(try await chat.service.message(id, as: "alice").deletedBy == "bot") }
            #expect(try await chat.botMessages(in: .group("room")).count == 3)
            #expect(chat.host.metrics.value("perch_rate_limited_actions_total", ["bot": "b"]) == 9)
        }
    }

    /// A plugin that throws at every event is ten warning lines a minute, whatever its messages say.
    @Test func aPluginFailingAtEveryEventIsABurstOfLinesAMinute() async throws {
        let (bot, registry) = pluginBot(FailingPlugin.self, on: "fail")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot], registry: registry) { chat in
            for index in 0..<13 { try await chat.post("fail \(index)", as: "carol", to: .group("room")) }
            try await chat.settle()
            #expect(chat.host.metrics.value("perch_handler_errors_total", ["bot": "b"]) == 13)
            let lines = await chat.log.filter { $0.contains("plugin failing failed") }
            #expect(lines.count == 10)
            #expect(lines.first?.contains("cannot handle message") == true)
        }
    }

    /// A stop waits for the bots' events in flight until its deadline, not longer: a plugin that
    /// ignores cancellation does not hold it. (The stop waited for both the consumers and the
    /// deadline, so for the plugin, as long as it took.)
    @Test func aStopEndsAtItsDeadlineWhileAPluginIgnoresCancellation() async throws {
        let (bot, registry) = pluginBot(StubbornPlugin.self, on: "hold")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot], registry: registry) { chat in
            try await chat.post("hold on", as: "carol", to: .group("room"))
            try await Task.sleep(for: .milliseconds(300))
            let stopped = Mutex(false)
            let stop = Task {
                await chat.host.stop(deadline: .milliseconds(200))
                stopped.withLock { $0 = true }
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while !stopped.withLock({ $0 }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(stopped.withLock { $0 }, "the stop outlasted its deadline")
            StubbornPlugin.open()
            await stop.value
        }
    }

    @Test func aMalformedPluginOrEventNeverCrashesTheHost() async throws {
        let rules = """
              - on: message
                do: [{ quote_reply: "q" }, { pin: { as: app_system } }, kick]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            // kick of the group owner is refused; the host logs and goes on.
            try await chat.post("from the owner", as: "alice", to: .group("room"))
            try await chat.post("from carol", as: "carol", to: .group("other"))
            try await chat.settle()
            #expect(await chat.host.state == .running)
            #expect(chat.host.metrics.value("perch_handler_errors_total", ["bot": "b"]) >= 1)
        }
    }
}

@Suite struct ReloadTests {
    @Test func reloadSwapsBetweenEventsLosingAndRepeatingNone() async throws {
        let v1 = botFile(
            """
              - on: message
                when: { groups: [room] }
                do: [{ reply: "v1 {message.text}" }]
            """, extra: "rate_limit: { per_minute: 100000, burst: 10000, per_conversation_per_minute: 100000 }")
        let v2 = v1.replacingOccurrences(of: "v1 {message.text}", with: "v2 {message.text}")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": v1]) { chat in
            let writer = Task {
                for index in 0..<120 { try await chat.post("n\(index)", as: "carol", to: .group("room")) }
            }
            try await Task.sleep(for: .milliseconds(20))
            try v2.write(toFile: chat.directory + "/../bots/b.yaml", atomically: true, encoding: .utf8)
            let loaded = ConfigurationLoader(environment: [:], swiftPlugins: PluginRegistry.standard.names)
                .load(configPath: chat.directory + "/../config.yaml")
            #expect(await chat.host.reload(loaded))
            try await writer.value
            let replies = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(replies.count == 120)
            let numbers = replies.map { $0.split(separator: " ")[1] }
            #expect(Set(numbers).count == 120)
            // Every reply is from one version or the other, and once v2 answered, v1 never did again.
            let firstV2 = replies.firstIndex { $0.hasPrefix("v2") } ?? replies.count
            #expect(replies[..<firstV2].allSatisfy { $0.hasPrefix("v1") })
            #expect(replies[firstV2...].allSatisfy { $0.hasPrefix("v2") })
        }
    }

    /// config.yaml's seed puts people in groups when it first names them, not at every start: a
    /// member who left or was kicked, or whose scope an admin changed, stays so across a reload
    /// (which seeds as a start does) until the seed itself changes for them.
    @Test func aSeededMembershipIsAppliedWhenTheSeedNamesItNotAtEveryStart() async throws {
        let bot = botFile("  - on: message\n    when: { text_matches: \"^!never\" }\n    do: [{ reply: \"x\" }]")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
            let service = chat.service
            func scope(_ uid: String, _ guid: String) async throws -> GroupMemberScope? {
                try await service.members(of: guid, as: "alice").first { $0.uid == uid }?.scope
            }
            try await service.leave("room", as: "carol")
            try await service.kick("carol", from: "other", by: "alice")
            _ = try await service.changeScope(of: "bob", in: "room", to: .participant, by: "alice")
            let configPath = chat.directory + "/../config.yaml"
            func reload() async {
                let loaded = ConfigurationLoader(environment: [:]).load(configPath: configPath)
                #expect(await chat.host.reload(loaded))
            }
            await reload()
            #expect(try await scope("carol", "room") == nil)
            #expect(try await scope("carol", "other") == nil)
            #expect(try await scope("bob", "room") == .participant)

            // The seed changes for carol in room (a scope now): applied; the rest stays as people left it.
            let changed = hostConfig.replacingOccurrences(
                of: "scope: admin }\n        - { uid: carol }",
                with: "scope: admin }\n        - { uid: carol, scope: moderator }")
            try #require(changed != hostConfig)
            try changed.write(toFile: configPath, atomically: true, encoding: .utf8)
            await reload()
            #expect(try await scope("carol", "room") == .moderator)
            #expect(try await scope("carol", "other") == nil)
            #expect(try await scope("bob", "room") == .participant)
        }
    }

    @Test func anInvalidReloadKeepsTheRunningConfiguration() async throws {
        let rules = """
              - on: message
                do: [{ reply: "still here" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            try "name: b\nuser:\n\tuid: broken\n".write(
                toFile: chat.directory + "/../bots/b.yaml", atomically: true, encoding: .utf8)
            let loaded = ConfigurationLoader(environment: [:]).load(configPath: chat.directory + "/../config.yaml")
            #expect(await chat.host.reload(loaded) == false)
            #expect(
                await chat.log.contains {
                    $0.contains("b.yaml:3:1: error: found character that cannot start any token")
                })
            try await chat.post("hello", as: "carol", to: .group("room"))
            #expect(try await chat.botMessages(in: .group("room")).compactMap(\.text) == ["still here"])
        }
    }
}

@Suite struct AdminToolTests {
    @Test func dryRunShowsWhatWouldFireWithoutDoingIt() async throws {
        try await withTestHost(configPath: repositoryRoot + "/config.yaml") { chat in
            let results = try await chat.host.dryRun(
                as: "carol", to: .group("general"), text: "hey <@uid:helper> buy scamlink")
            let described = results.map(\.description).joined(separator: "\n")
            #expect(described.contains("helper / answer-mentions:\n  - quote_reply: Hi Carol!"))
            #expect(described.contains("moderator / word-list:\n  - delete"))
            #expect(!described.contains("announcer"))
            // Options are told, not only the action's name; and each dry run is matched on its own
            // text (the first one's listed word was remembered for the next: both have id 0).
            let announcement = try await chat.host.dryRun(as: "alice", to: .group("announcements"), text: "Friday")
            #expect(
                announcement.map(\.description) == [
                    "announcer / pin-announcements:\n  - pin as app_system, unpinning its own oldest pin when the "
                        + "conversation is full"
                ])
            let root = try await chat.post("Release notes", as: "carol", to: .group("general"))
            let follow = try await chat.host.dryRun(
                as: "carol", to: .group("general"), thread: root.id, text: "!follow")
            #expect(
                follow.map(\.description).contains("thread-follow / follow:\n  - plugin thread-follow"), "\(follow)")
            // A message the service would refuse is refused here too, not answered "no bot would act".
            let refusals: [(String, Receiver, Int64?, ChatError.Code)] = [
                ("nobody", .group("general"), nil, .uidNotFound),
                ("carol", .group("nope"), nil, .guidNotFound),
                ("erin", .group("general"), nil, .groupNotJoined),
                ("carol", .group("general"), 999_999, .messageIdNotFound),
            ]
            _ = try await chat.service.createUser(uid: "erin", name: "Erin")
            for (uid, receiver, thread, code) in refusals {
                await #expect(throws: ChatError.self) {
                    do {
                        _ = try await chat.host.dryRun(as: uid, to: receiver, thread: thread, text: "hi")
                    } catch let error as ChatError {
                        #expect(error.code == code, "\(uid) \(receiver)")
                        throw error
                    }
                }
            }
            try await chat.settle()
            #expect(try await chat.messages(in: .group("general")).filter { $0.sender != "carol" }.isEmpty)
        }
    }

    @Test func jsonLogLinesParse() throws {
        let lines = Mutex<[String]>([])
        let logger = HostLogger(format: .json, sink: { line in lines.withLock { $0.append(line) } })
        logger.with(["bot": "helper"]).info("ready", ["bots": "5"])
        let line = try #require(lines.withLock { $0.first })
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
        #expect(object?["bot"] == "helper" && object?["message"] == "ready" && object?["level"] == "info")
        #expect(object?["bots"] == "5" && object?["time"] != nil)
    }
}

/// Throws at every event, naming it.
/// A plugin whose `handle` ignores cancellation: it returns once the test opens its gate.
struct StubbornPlugin: BotPlugin {
    static let name = "stubborn"
    static let gate = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
    init(configuration: NoConfiguration) throws {}
    func handle(_ context: BotContext) async throws {
        await withCheckedContinuation { continuation in
            let open = Self.gate.withLock { gate in
                if !gate.open { gate.waiting.append(continuation) }
                return gate.open
            }
            if open { continuation.resume() }
        }
    }
    static func open() {
        for continuation in gate.withLock({ gate in
            gate.open = true
            defer { gate.waiting.removeAll() }
            return gate.waiting
        }) { continuation.resume() }
    }
}

struct FailingPlugin: BotPlugin {
    static let name = "failing"
    struct Refusal: Error, CustomStringConvertible {
        var id: Int64
        var description: String { "cannot handle message \(id)" }
    }
    init(configuration: NoConfiguration) throws {}
    func handle(_ context: BotContext) async throws {
        throw Refusal(id: context.message?.id ?? 0)
    }
}
