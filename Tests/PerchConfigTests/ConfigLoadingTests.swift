import Foundation
import PerchCLI
import PerchChat
import PerchConfig
import Testing

@Suite struct ConfigLoadingTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test func reportsAllFindingsAtOnceNotOnlyTheFirst() throws {
        let fixture = try ConfigFixture(
            config:
                "version: 1\nfeatures: {pin: maybe}\nlimits: {savesPerUser: -1}\nui: {threadSubscription: {enabeld: true}}\n",
            bots: ["b.yaml": "name: b\nuser: {uid: x}\nhears: nobody\nrules:\n  - on: nothing\n    do: [delete]\n"])
        defer { fixture.cleanup() }
        let loaded = fixture.load()
        #expect(
            loaded.findings.map(\.description) == [
                "bots/b.yaml:3:8: error: hears: unknown value 'nobody' (expected one of: all, commands, mentions)",
                "bots/b.yaml:5:9: error: rules[0].on: unknown trigger 'nothing' (triggers: message, thread_reply, mention, command, pinned, unpinned, edited, deleted, member_joined, thread_subscribed, thread_unsubscribed, saved, unsaved, reaction_added, reaction_removed, schedule, webhook)",
                "config.yaml:2:17: error: features.pin: expected true or false, found a string 'maybe'",
                "config.yaml:3:24: error: limits.savesPerUser: -1 is out of range; expected 1 to 10000",
                "config.yaml:4:27: error: ui.threadSubscription.enabeld: unknown key 'enabeld'; did you mean 'enabled'?",
            ])
    }

    /// A reload names the settings it does not apply, compared with the start's; the bots' own
    /// settings and the seed are not among them, and a secret's value is never shown.
    @Test func aReloadNamesTheSettingsThatWaitForARestart() throws {
        func config(_ text: String) throws -> PerchConfiguration {
            let fixture = try ConfigFixture(config: text)
            defer { fixture.cleanup() }
            let loaded = fixture.load(environment: ["KEY": "s3cret-key-of-the-start", "NEW": "s3cret-key-rotated"])
            #expect(loaded.isValid, "\(loaded.findings)")
            return try #require(loaded.config)
        }
        let started = try config(
            ConfigFixture.baseConfig + "\nserver:\n  listen: 127.0.0.1:8080\n  apiKey: ${KEY}\nlimits: {botHops: 3}\n")
        #expect(started.settingsNeedingRestart(comparedWith: started).isEmpty)
        let next = try config(
            """
            version: 1
            seed:
              users:
                - { uid: carol, name: Carol }
            server:
              listen: 127.0.0.1:9090
              apiKey: ${NEW}
              bodyTimeoutSeconds: 9
            limits: {botHops: 5, pinsPerConversation: 7}
            features: {save: false}
            strings: {THREAD_SUBSCRIBE: Follow}
            ui: {threadSubscription: {hideButton: true}}
            """)
        let waiting = next.settingsNeedingRestart(comparedWith: started).map(\.description)
        #expect(
            waiting == [
                "server.listen (127.0.0.1:8080 → 127.0.0.1:9090)", "server.apiKey",
                "server.bodyTimeoutSeconds (30 → 9)",
                "features.save (true → false)",
                "limits.pinsPerConversation (100 → 7)",
            ])
        // The copy and the ui switches are the bots' and the web chat's at the reload: none waits.
        #expect(!waiting.joined().contains("s3cret"))
    }

    @Test func aValueOfTheWrongTypeIsOneFindingNotARangeErrorBesideIt() throws {
        let fixture = try ConfigFixture(
            config: "version: 1\nserver: {maxStreams: abc, maxBodyBytes: many}\nlimits: {botHops: 99}\n",
            bots: ["b.yaml": ConfigFixture.baseBot])
        defer { fixture.cleanup() }
        #expect(
            fixture.load().findings.filter { $0.location.file == "config.yaml" }.map(\.description) == [
                "config.yaml:2:22: error: server.maxStreams: expected an integer, found a string 'abc'",
                "config.yaml:2:41: error: server.maxBodyBytes: expected an integer, found a string 'many'",
                "config.yaml:3:19: error: limits.botHops: 99 is out of range; expected 0 to 20",
            ])
    }

    @Test func aBotValueOfTheWrongTypeIsOneFindingNotARangeErrorBesideIt() throws {
        let fixture = try ConfigFixture(
            bots: [
                "b.yaml": ConfigFixture.baseBot
                    + "\nrate_limit: {per_minute: abc, burst: 0}\nplugins:\n  - {name: k, exec: [k], timeout_ms: xyz}\n"
            ])
        defer { fixture.cleanup() }
        #expect(
            fixture.load().findings.filter { $0.location.file.hasSuffix("b.yaml") }.map(\.description) == [
                "bots/b.yaml:8:26: error: rate_limit.per_minute: expected an integer, found a string 'abc'",
                "bots/b.yaml:8:38: error: rate_limit.burst: 0 is out of range; expected 1 to 100000",
                "bots/b.yaml:10:22: warning: plugins[0].exec[0]: the program 'k' is not on PATH; the plugin cannot start here",
                "bots/b.yaml:10:38: error: plugins[0].timeout_ms: expected an integer, found a string 'xyz'",
            ])
    }

    /// A refused trigger is one finding: the rule's actions, placeholders and `help` are not checked
    /// against the `message` trigger that stands in for it (`{args}` beside a refused command name
    /// was reported as "only set for command triggers"), while the checks that need no trigger
    /// still run (`{sender.nmae}`).
    @Test func aRefusedTriggerIsOneFindingNotItsActionsToo() throws {
        let bot = """
            name: x
            user: {uid: x}
            rules:
              - on: {command: "two words"}
                help: does two things
                do: [{reply: "{args}"}]
              - on: {reaction_added: "a b"}
                do: [{quote_reply: "{reaction} {sender.nmae}"}]
            """
        let fixture = try ConfigFixture(bots: ["x.yaml": bot])
        defer { fixture.cleanup() }
        #expect(
            fixture.load().findings.filter { $0.location.file.hasSuffix("x.yaml") }.map(\.description) == [
                "bots/x.yaml:4:9: error: rules[0].on: a command name is one word, found 'two words'",
                "bots/x.yaml:7:26: error: rules[1].on.reaction_added: 'a b' is no reaction: it must have no spaces or control characters",
                "bots/x.yaml:8:24: error: rules[1].do[0].quote_reply: unknown placeholder '{sender.nmae}'; sender has {sender.name}, {sender.uid}",
            ])
    }

    /// A plugin reached over HTTP is posted only its `plugin:` actions: one no rule calls is never
    /// posted to, and `perch check` says so.
    @Test func aURLPluginNoRuleCallsIsAWarning() throws {
        let plugins = "\nplugins:\n  - {name: relay, url: \"https://example.com/r\"}\n"
        let fixture = try ConfigFixture(bots: ["b.yaml": ConfigFixture.baseBot + plugins])
        defer { fixture.cleanup() }
        #expect(
            fixture.load().findings.filter { $0.location.file.hasSuffix("b.yaml") }.map(\.description) == [
                "bots/b.yaml:9:24: warning: plugins[0].url: no rule's `plugin: relay` action calls this plugin, and a "
                    + "plugin reached over HTTP is posted only those"
            ])
        let called = try ConfigFixture(bots: [
            "b.yaml": ConfigFixture.baseBot.replacingOccurrences(of: "- reply: \"hello\"", with: "- plugin: relay")
                + plugins
        ])
        defer { called.cleanup() }
        #expect(called.load().findings.filter { $0.location.file.hasSuffix("b.yaml") }.isEmpty)
    }

    @Test func nothingIsSaidAboutWhatLiesUnderARefusedValue() throws {
        // `user` is not a mapping: its uid is not named invalid besides.
        let bot = try ConfigFixture(bots: [
            "b.yaml": ConfigFixture.baseBot.replacingOccurrences(
                of: "user: { uid: botb, name: Bot B }", with: "user: 5")
        ])
        defer { bot.cleanup() }
        #expect(
            bot.load().findings.map(\.description) == [
                "bots/b.yaml:2:7: error: user: expected a mapping, found a number '5'"
            ])
        // config.yaml's groups could not be read: the bots' groups are not named unknown besides.
        let config = try ConfigFixture(
            config: "version: 1\nseed:\n  users: [{uid: alice, name: Alice}]\n  groups: general\n",
            bots: ["b.yaml": ConfigFixture.baseBot])
        defer { config.cleanup() }
        #expect(
            config.load().findings.map(\.description) == [
                "config.yaml:4:11: error: seed.groups: expected a list, found a string 'general'"
            ])
    }

    @Test func decodesTheValuesAndDefaults() throws {
        let fixture = try ConfigFixture(
            config: ConfigFixture.baseConfig + "\nlimits: {pinsPerConversation: 7}\nfeatures: {save: false}\n"
                + "notifications:\n  group: {replies: 4, quotedReplies: SUBSCRIBE_TO_QUOTES_ON_OWN_MESSAGES}\n"
                + "server:\n  apiKey: ${KEY}\n",
            bots: ["b.yaml": ConfigFixture.baseBot])
        defer { fixture.cleanup() }
        let loaded = fixture.load(environment: ["KEY": "0123456789abcdef0123"])
        #expect(loaded.findings.isEmpty)
        let config = try #require(loaded.config)
        #expect(config.limits.pinsPerConversation == 7)
        #expect(config.limits.savesPerUser == 100)
        #expect(config.storage.eventRetentionDays == 7)
        #expect(config.features.pin && !config.features.save)
        #expect(config.notifications.group.replies == .subscribeToSubscribedThreads)
        #expect(config.notifications.group.quotedReplies == .subscribeToQuotesOnOwnMessages)
        #expect(config.notifications.group.messages == .subscribeToAll)
        #expect(config.server.apiKey == "0123456789abcdef0123")
        #expect(config.strings["THREAD_UNAVAILABLE"] == "You no longer have access to this thread.")
        #expect(loaded.bots.map(\.bot.name) == ["b"])
        #expect(loaded.bots[0].bot.rules[0].actions == [.reply(try Template.parse("hello"))])
    }

    @Test func theEventRetentionIsDaysFromNoneToTenYears() throws {
        for (days, finding) in [
            ("0", nil), ("30", nil),
            ("-1", "config.yaml:2:31: error: storage.eventRetentionDays: -1 is out of range; expected 0 to 3650"),
            ("week", "config.yaml:2:31: error: storage.eventRetentionDays: expected an integer, found a string 'week'"),
        ] {
            let fixture = try ConfigFixture(
                config: "version: 1\nstorage: {eventRetentionDays: \(days)}\n", bots: ["b.yaml": ConfigFixture.baseBot])
            defer { fixture.cleanup() }
            let loaded = fixture.load()
            #expect(
                loaded.findings.filter { $0.location.file == "config.yaml" }.map(\.description)
                    == (finding.map { [$0] } ?? []))
            if finding == nil { #expect(loaded.config?.storage.eventRetentionDays == Int(days)) }
        }
    }

    @Test func theShippedConfigurationHasNoFindings() {
        let loaded = ConfigurationLoader(environment: [:], swiftPlugins: Perch.builtInPlugins)
            .load(configPath: Self.repositoryRoot + "/config.yaml")
        #expect(loaded.findings.map(\.description) == [])
        #expect(loaded.isValid)
        #expect(loaded.bots.count >= 5)
    }

    @Test func checkCommandExitCodesAndSummary() throws {
        let good = try ConfigFixture(bots: ["b.yaml": ConfigFixture.baseBot])
        defer { good.cleanup() }
        var output: [String] = []
        let clean = Perch.main(["check", "--config", good.directory + "/config.yaml"], print: { output.append($0) })
        #expect(clean == 0)
        #expect(output == ["1 bot, 1 rule, 0 errors"])

        let bad = try ConfigFixture(bots: ["b.yaml": "name: b\nuser:\n\tuid: x\n"])
        defer { bad.cleanup() }
        output = []
        let failed = Perch.main(["check", "--config", bad.directory + "/config.yaml"], print: { output.append($0) })
        #expect(failed == 1)
        #expect(output.count == 2)
        #expect(
            output[0].hasSuffix(
                "/bots/b.yaml:3:1: error: found character that cannot start any token (a tab; YAML indents with spaces only)"
            ))
        #expect(output[1] == "0 bots, 0 rules, 1 error")
    }

    @Test func checkCommandJSON() throws {
        let bad = try ConfigFixture(config: "version: 3\n")
        defer { bad.cleanup() }
        var output = ""
        let code = Perch.main(
            ["check", "--format", "json", "--config", bad.directory + "/config.yaml"],
            print: { output += $0 })
        #expect(code == 1)
        let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
        #expect(object?["valid"] as? Bool == false)
        let findings = try #require(object?["findings"] as? [[String: Any]])
        #expect(findings.count == 1)
        #expect(findings[0]["line"] as? Int == 1)
        #expect(findings[0]["column"] as? Int == 10)
        #expect(findings[0]["path"] as? String == "version")
    }

    @Test func usageErrorsExitWith64() {
        var errors: [String] = []
        #expect(Perch.main(["frobnicate"], print: { _ in }, printError: { errors.append($0) }) == 64)
        #expect(Perch.main(["check", "--format", "xml"], print: { _ in }, printError: { errors.append($0) }) == 64)
        #expect(Perch.main(["check", "--config"], print: { _ in }, printError: { errors.append($0) }) == 64)
        #expect(errors.count == 3)
    }

    /// A word the command would not use is refused, not ignored: `perch check other/config.yaml`
    /// had checked ./config.yaml and said nothing of the path it was given.
    @Test func anUnusedWordIsAUsageErrorAndHelpIsNot() async throws {
        var errors: [String] = []
        var output: [String] = []
        #expect(Perch.main(["check", "other/config.yaml"], print: { _ in }, printError: { errors.append($0) }) == 64)
        #expect(errors.last?.hasPrefix("perch: unexpected argument 'other/config.yaml'") == true)
        #expect(Perch.main(["check", "--verbose"], print: { _ in }, printError: { errors.append($0) }) == 64)
        #expect(errors.last?.hasPrefix("perch: unknown option --verbose") == true)
        #expect(Perch.main(["check", "--help"], print: { output.append($0) }, printError: { errors.append($0) }) == 0)
        #expect(Perch.main(["-h"], print: { output.append($0) }, printError: { errors.append($0) }) == 0)
        // A command's --help is its own usage; the program's, the whole list.
        #expect(output.count == 2 && output.first?.hasPrefix("usage: perch check ") == true)
        #expect(output.last?.hasPrefix("usage: perch <command>") == true)
        #expect(errors.count == 2)
        // `run --help` prints the usage and starts nothing (no configuration is read).
        #expect(await RunCommand.run(["run", "--help", "--config", "/nonexistent/config.yaml"]) == 0)
        #expect(await RunCommand.run(["run", "extra"]) == 64)
        // The same for the commands over the API and send into the local database.
        #expect(await Perch.client("pins", ["pins", "--bogus"]) == 64)
        #expect(await Perch.client("tail", ["tail", "--help"]) == 0)
        #expect(await Perch.send(["send", "--local", "--help"]) == 0)
        #expect(await Perch.send(["send", "--local", "--as", "a", "one", "two"]) == 64)
        // send and dry-run take one text.
        #expect(throws: UsageError.self) {
            try ParsedArguments(["send", "--as", "a", "hello", "there"], valued: ["as"], positional: 1)
        }
        #expect(
            try ParsedArguments(["send", "--as", "a", "hello there"], valued: ["as"], positional: 1).positional == [
                "hello there"
            ])
    }

    /// The host starts an `exec` plugin through `/usr/bin/env` in the configuration's directory;
    /// a program it would not find is said at check time. A warning, not an error: the host may
    /// run with another PATH than the check.
    /// The web chat's development sign-in on an address other machines reach is a warning (anyone
    /// there could act as any seeded person); on a loopback address it is what `make run` uses.
    @Test func aDevelopmentSignInReachableFromOtherMachinesIsAWarning() throws {
        for (listen, warned) in [
            ("0.0.0.0:8080", true), ("10.1.2.3:80", true), ("[::]:8080", true), ("127.0.0.1:8080", false),
            ("127.0.0.2:9000", false), ("localhost:8080", false), ("[::1]:8080", false),
        ] {
            let fixture = try ConfigFixture(
                config: ConfigFixture.baseConfig + "\nserver:\n  listen: \"\(listen)\"\n  devSignIn: true\n")
            defer { fixture.cleanup() }
            let loaded = fixture.load()
            #expect(loaded.isValid, "\(listen)")
            let expected =
                "config.yaml:14:14: warning: server.devSignIn: lets anyone who reaches \(listen) act as any seeded "
                + "person without a token; keep it for development on a loopback address (127.0.0.1)"
            #expect(loaded.findings.map(\.description) == (warned ? [expected] : []), "\(listen)")
        }
    }

    /// The findings of `bot` beside the base config with a second group `other`, which it loads with.
    static func findingsOfAValidBot(_ bot: String) throws -> [String] {
        let config = ConfigFixture.baseConfig + "\n    - { guid: other, name: Other, owner: alice }\n"
        let fixture = try ConfigFixture(config: config, bots: ["b.yaml": bot])
        defer { fixture.cleanup() }
        let loaded = fixture.load()
        #expect(loaded.isValid)
        return loaded.findings.map(\.description)
    }

    /// A rule that can never fire loads, with a warning at the condition that rules it out; one
    /// whose trigger the bot's `hears` keeps out of groups says so.
    @Test func aRuleThatCanNeverFireIsAWarning() throws {
        let bot = """
            name: b
            user: { uid: botb, name: Bot B }
            groups: [general]
            hears: mentions
            rules:
              - on: message
                when: { groups: [general, other] }
                do: [{ reply: a }]
              - on: message
                when: { one_on_one: true, sender_scope: admin }
                do: [{ reply: b }]
              - on: { command: x }
                do: [{ reply: c }]
              - on: thread_reply
                when: { threaded: false }
                do: [{ reply: d }]
              - on: message
                when: { one_on_one: true, groups: [general] }
                do: [{ reply: e }]
              - on: message
                when: { one_on_one: true, threaded: true }
                do: [{ reply: fine }]
            """
        #expect(
            try Self.findingsOfAValidBot(bot) == [
                "bots/b.yaml:7:31: warning: rules[0].when.groups[1]: the bot is not in group 'other' (its groups: "
                    + "general), so this rule never hears it; add it to `groups`",
                "bots/b.yaml:10:25: warning: rules[1].when.one_on_one: a sender's scope is their scope in a group, and "
                    + "one_on_one: true leaves no group: this rule never fires",
                "bots/b.yaml:12:9: warning: rules[2].on: with hears: mentions, a command in a group reaches this bot "
                    + "only when it also mentions the bot (one-on-one, always); `hears: commands` or `all` lets every "
                    + "command in",
                "bots/b.yaml:15:23: warning: rules[3].when.threaded: a thread_reply is threaded: with threaded: false "
                    + "it never fires",
                "bots/b.yaml:18:25: warning: rules[4].when.one_on_one: one_on_one: true and `groups` exclude each "
                    + "other: this rule never fires",
            ])
    }

    /// Deleting, kicking, banning and pinning in a group need a moderator's scope: a bot joined
    /// as a participant has each refused at every message.
    @Test func anActionTheBotsScopeDoesNotAllowIsAWarning() throws {
        let bot = """
            name: b
            user: { uid: botb, name: Bot B }
            system: true
            groups: [general, { guid: other, scope: moderator }]
            rules:
              - on: message
                do: [delete, { reply: gone }, pin, { pin: { as: app_system } }]
              - on: message
                when: { groups: [other] }
                do: [kick]
              - on: message
                when: { one_on_one: true }
                do: [pin]
            """
        #expect(
            try Self.findingsOfAValidBot(bot) == [
                "bots/b.yaml:7:10: warning: rules[0].do[0]: 'delete' needs the bot to be a moderator, admin or owner "
                    + "of the group, and it is a participant of general: write `- { guid: general, scope: moderator }` "
                    + "under `groups`",
                "bots/b.yaml:7:35: warning: rules[0].do[2]: 'pin' needs the bot to be a moderator, admin or owner of "
                    + "the group, and it is a participant of general: write `- { guid: general, scope: moderator }` "
                    + "under `groups`, or pin `as: app_system` (with `system: true`)",
            ])
    }

    @Test func anExecPluginWhoseProgramCannotStartIsAWarning() throws {
        let bot =
            ConfigFixture.baseBot + """

                plugins:
                  - { name: typo, exec: [pyhton3, plugin.py] }
                  - { name: gone, exec: [./plugins/gone.sh] }
                  - { name: plain, exec: [plugins/plain.sh] }
                  - { name: ready, exec: [plugins/ready.sh] }
                  - { name: onpath, exec: [env, python3] }
                """
        let fixture = try ConfigFixture(bots: ["b.yaml": bot])
        defer { fixture.cleanup() }
        try FileManager.default.createDirectory(
            atPath: fixture.directory + "/plugins", withIntermediateDirectories: true)
        for name in ["plain.sh", "ready.sh"] {
            try "#!/bin/sh\n".write(toFile: fixture.directory + "/plugins/" + name, atomically: true, encoding: .utf8)
        }
        try FileManager.default.setAttributes(
            [.posixPermissions: 0o755], ofItemAtPath: fixture.directory + "/plugins/ready.sh")
        let loaded = fixture.load(environment: ["PATH": "/usr/bin:/bin"])
        #expect(
            loaded.findings.map(\.description) == [
                "bots/b.yaml:9:26: warning: plugins[0].exec[0]: the program 'pyhton3' is not on PATH; the plugin cannot start here",
                "bots/b.yaml:10:26: warning: plugins[1].exec[0]: the program './plugins/gone.sh' does not exist; the plugin cannot start here",
                "bots/b.yaml:11:27: warning: plugins[2].exec[0]: the program 'plugins/plain.sh' is not executable; the plugin cannot start here",
            ])
        #expect(loaded.isValid)
        var output: [String] = []
        #expect(
            Perch.main(["check", "--config", fixture.directory + "/config.yaml"], print: { output.append($0) }) == 0)
        #expect(output.last == "1 bot, 1 rule, 0 errors, 3 warnings")
    }

    @Test func cronSchedules() throws {
        let weekdayMornings = try CronExpression("30 9 * * 1-5")
        // 2026-11-30 is a Monday.
        let monday0930: Int64 = 1_796_031_000
        #expect(weekdayMornings.matches(epochSeconds: monday0930))
        #expect(!weekdayMornings.matches(epochSeconds: monday0930 + 60))
        #expect(weekdayMornings.next(after: monday0930) == monday0930 + 86_400)
        let everyFive = try CronExpression("*/5 * * * *")
        #expect(everyFive.next(after: 0) == 300)
        #expect(throws: ConfigValueError.self) { try CronExpression("* * *") }
        // Day and month names, in any case, alone and in ranges, as cron takes them.
        let named = try CronExpression("30 9 * Jan,mar Mon-Fri")
        let numbered = try CronExpression("30 9 * 1,3 1-5")
        var (a, b): (Int64, Int64) = (0, 0)
        for _ in 0..<40 {
            (a, b) = (named.next(after: a) ?? -1, numbered.next(after: b) ?? -2)
            #expect(a == b)
        }
        #expect(named.matches(epochSeconds: 1_704_965_400))  // Thursday 2024-01-11 09:30 UTC
        #expect(!named.matches(epochSeconds: 1_705_138_200))  // Saturday 2024-01-13 09:30 UTC
        #expect(!named.matches(epochSeconds: 1_707_643_800))  // Sunday 2024-02-11 09:30 UTC, February
        #expect(throws: ConfigValueError.self) { try CronExpression("0 0 * Smarch *") }
        #expect(throws: ConfigValueError.self) { try CronExpression("0 0 * * Fri-Mon") }
    }

    @Test func templatesParseOnce() throws {
        let template = try Template.parse("Hi {sender.name}, {{literal}} {word}")
        #expect(template.variables == [["sender", "name"], ["word"]])
        let rendered = template.render { path in path == ["sender", "name"] ? "Ann" : path == ["word"] ? "x" : nil }
        #expect(rendered == "Hi Ann, {literal} x")
    }
}

@Suite struct DocumentationExampleTests {
    /// Every ```yaml block of docs/configuration.md that starts with `# config.yaml` or
    /// `# bots/NAME.yaml` loads; the one the text says is refused is refused.
    @Test func everyExampleInTheConfigurationGuideLoads() throws {
        let text = try String(
            contentsOfFile: ConfigLoadingTests.repositoryRoot + "/docs/configuration.md", encoding: .utf8)
        let blocks = text.components(separatedBy: "```yaml\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        #expect(blocks.count >= 4)
        for block in blocks {
            if block.hasPrefix("# config.yaml") {
                let fixture = try ConfigFixture(config: block)
                defer { fixture.cleanup() }
                let findings = fixture.load().findings.map(\.description)
                if block.contains("x-preferences") {
                    #expect(
                        findings == [
                            "config.yaml:3:1: error: x-preferences: unknown key 'x-preferences' (known keys: admins, backend, botsDirectory, features, limits, matrix, notifications, seed, server, storage, strings, ui, version)"
                        ])
                } else {
                    #expect(findings == [], "example:\n\(block)")
                }
            } else if block.hasPrefix("# bots/") {
                let fixture = try ConfigFixture(bots: ["example.yaml": block])
                defer { fixture.cleanup() }
                #expect(fixture.load().findings.map(\.description) == [], "example:\n\(block)")
            } else {
                Issue.record("a yaml example without a file comment:\n\(block)")
            }
        }
    }
}

@Suite struct PluginConfigCheckTests {
    @Test func checkDecodesPluginConfigurationsWithLocations() throws {
        let bot = "name: f\nuser: {uid: f}\nplugins:\n  - name: thread-follow\n    config:\n      folow: track\n"
        let fixture = try ConfigFixture(bots: ["f.yaml": bot])
        defer { fixture.cleanup() }
        var output: [String] = []
        let code = Perch.main(["check", "--config", fixture.directory + "/config.yaml"], print: { output.append($0) })
        #expect(code == 1)
        #expect(
            output.first?.hasSuffix(
                "bots/f.yaml:6:7: error: plugins[0].config.folow: unknown key 'folow'; did you mean 'follow'?") == true,
            "\(output)")
    }
}
