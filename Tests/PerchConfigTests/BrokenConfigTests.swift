import Foundation
import PerchConfig
import Testing

/// One broken configuration and the exact finding it must produce.
struct BrokenCase: CustomTestStringConvertible, Sendable {
    var name: String
    var config: String?
    var bots: [String: String]
    var expected: String

    var testDescription: String { name }

    static func config(_ name: String, _ text: String, _ expected: String) -> BrokenCase {
        BrokenCase(name: name, config: text, bots: [:], expected: expected)
    }

    static func bot(_ name: String, _ text: String, _ expected: String) -> BrokenCase {
        BrokenCase(name: name, config: nil, bots: ["b.yaml": text], expected: expected)
    }

    static func bots(_ name: String, _ files: [String: String], _ expected: String) -> BrokenCase {
        BrokenCase(name: name, config: nil, bots: files, expected: expected)
    }
}

let base = ConfigFixture.baseConfig

let brokenCases: [BrokenCase] = [
    // YAML syntax, reported by libyaml at its own position.
    .config(
        "tab indentation", "version: 1\nserver:\n\tlisten: x\n",
        "config.yaml:3:1: error: found character that cannot start any token (a tab; YAML indents with spaces only)"),
    .config(
        "unclosed flow sequence", "version: 1\nbotsDirectory: [a, b\n",
        "config.yaml:3:1: error: did not find expected ',' or ']' (while parsing a flow sequence at line 2, column 16)"),
    .config(
        "unclosed quote", "version: 1\nbotsDirectory: \"bots\n",
        "config.yaml:3:1: error: found unexpected end of stream (while scanning a quoted scalar at line 2, column 16)"),
    .config(
        "mapping value in a plain scalar", "version: 1\nbotsDirectory: a: b\n",
        "config.yaml:2:17: error: mapping values are not allowed in this context"),
    .config(
        "unknown alias", "version: 1\nserver: *nope\n",
        "config.yaml:2:9: error: unknown alias '*nope': no anchor '&nope' is defined before it"),
    .config(
        "duplicate key", "version: 1\nfeatures:\n  pin: true\n  pin: false\n",
        "config.yaml:4:3: error: duplicate key 'pin' (first defined at line 3, column 3)"),
    .config(
        "second document", "version: 1\n---\nversion: 1\n",
        "config.yaml:2:1: error: a file holds one YAML document; a second one starts here"),
    .config(
        "merge of a scalar", "version: 1\nfeatures:\n  <<: 5\n",
        "config.yaml:3:7: error: '<<' merges a mapping or a list of mappings, not a number"),
    .config(
        "unset variable", "version: 1\nserver:\n  apiKey: ${PERCH_TEST_UNSET}\n",
        "config.yaml:3:11: error: server.apiKey: environment variable 'PERCH_TEST_UNSET' is not set (write ${PERCH_TEST_UNSET:-default} to give a default)"
    ),
    .config(
        "unset variable inside quotes", "version: 1\nserver:\n  listen: \"127.0.0.1:${PERCH_TEST_PORT}\"\n",
        "config.yaml:3:22: error: server.listen: environment variable 'PERCH_TEST_PORT' is not set (write ${PERCH_TEST_PORT:-default} to give a default)"
    ),
    // An unset variable leaves only its own value unchecked: every other mistake is still reported.
    .config(
        "unset variable beside a limit out of range",
        "version: 1\nserver:\n  apiKey: ${PERCH_TEST_UNSET}\nlimits:\n  pinsPerConversation: -3\n",
        "config.yaml:5:24: error: limits.pinsPerConversation: -3 is out of range; expected 1 to 10000"),
    .bot(
        "unset variable beside an unknown group",
        "name: b\nuser:\n  uid: b1\n  name: ${PERCH_TEST_UNSET}\ngroups: [nowhere]\n",
        "bots/b.yaml:5:10: error: groups[0]: unknown group 'nowhere' (not in seed.groups)"),
    // Actions and placeholders the trigger's event cannot serve.
    .bot(
        "pin on a schedule",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: {schedule: \"0 9 * * *\", group: general}\n    do: [pin]\n",
        "bots/b.yaml:5:10: error: rules[0].do[0]: 'pin' acts on a message or its sender, and a schedule rule has neither (it can reply into its conversation or hand the event to a plugin)"
    ),
    .bot(
        "reply from a webhook without a conversation",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: {webhook: deploy}\n    do: [{reply: done}]\n",
        "bots/b.yaml:5:18: error: rules[0].do[0].reply: a webhook rule replies into the conversation given with `group` or `user` beside `webhook`"
    ),
    .bot(
        "message placeholder on a join",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: member_joined\n    do: [{reply: \"{message.text}\"}]\n",
        "bots/b.yaml:5:18: error: rules[0].do[0].reply: {message.text} is not set: a member_joined event has no message"
    ),
    .bot(
        "quote reply on a join",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: member_joined\n    do: [{quote_reply: hi}]\n",
        "bots/b.yaml:5:24: error: rules[0].do[0].quote_reply: 'quote_reply' acts on a message, and a member_joined event has none (reply, direct_message, kick, ban and plugin act on the member and the group)"
    ),
    // Shapes and types.
    .config(
        "unknown key with suggestion", "version: 1\nfeautres:\n  pin: true\n",
        "config.yaml:2:1: error: feautres: unknown key 'feautres'; did you mean 'features'?"),
    .config(
        "unknown key without suggestion", "version: 1\ncolour: red\n",
        "config.yaml:2:1: error: colour: unknown key 'colour' (known keys: admins, backend, botsDirectory, features, limits, matrix, notifications, seed, server, storage, strings, ui, version)"
    ),
    .config(
        "nested unknown key", "version: 1\nui:\n  threadSubscription:\n    enable: false\n",
        "config.yaml:4:5: error: ui.threadSubscription.enable: unknown key 'enable'; did you mean 'enabled'?"),
    .config(
        "mapping expected, list found", "version: 1\nfeatures: [pin]\n",
        "config.yaml:2:11: error: features: expected a mapping, found a list"),
    .config(
        "boolean expected", "version: 1\nfeatures:\n  pin: yes\n",
        "config.yaml:3:8: error: features.pin: expected true or false, found a string 'yes'"),
    .config(
        "integer expected", "version: 1\nlimits:\n  savesPerUser: many\n",
        "config.yaml:3:17: error: limits.savesPerUser: expected an integer, found a string 'many'"),
    .config(
        "list expected", "version: 1\nseed:\n  users: alice\n",
        "config.yaml:3:10: error: seed.users: expected a list, found a string 'alice'"),
    .config(
        "missing version", "features:\n  pin: true\n",
        "config.yaml:1:1: error: missing required key 'version'"),
    .config(
        "missing key in a list item", "version: 1\nseed:\n  users:\n    - uid: x\n",
        "config.yaml:4:7: error: seed.users[0]: missing required key 'name'"),
    .config(
        "unknown choice with suggestion", "version: 1\nbackend: embeded\n",
        "config.yaml:2:10: error: backend: unknown value 'embeded'; did you mean 'embedded'? (expected one of: embedded, matrix)"
    ),
    .config(
        "unknown notification option", "version: 1\nnotifications:\n  group:\n    messages: SUBSCRIBE_ALL\n",
        "config.yaml:4:15: error: notifications.group.messages: unknown option 'SUBSCRIBE_ALL'; expected one of DONT_SUBSCRIBE (1), SUBSCRIBE_TO_ALL (2), SUBSCRIBE_TO_MENTIONS (3)"
    ),
    // Values.
    .config(
        "too-new version", "version: 2\n",
        "config.yaml:1:10: error: version: configuration version 2 is newer than this Perch reads (at most 1); upgrade Perch or write version: 1"
    ),
    .config(
        "out of range", "version: 1\nlimits:\n  pinsPerConversation: 0\n",
        "config.yaml:3:24: error: limits.pinsPerConversation: 0 is out of range; expected 1 to 10000"),
    .config(
        "streams out of range", "version: 1\nserver:\n  maxStreams: 0\n",
        "config.yaml:3:15: error: server.maxStreams: 0 is out of range; expected 1 to 100000"),
    .config(
        "idle timeout out of range", "version: 1\nserver:\n  idleTimeoutSeconds: 0\n",
        "config.yaml:3:23: error: server.idleTimeoutSeconds: 0 is out of range; expected 1 to 86400"),
    .config(
        "heartbeat out of range", "version: 1\nserver:\n  heartbeatSeconds: 3601\n",
        "config.yaml:3:21: error: server.heartbeatSeconds: 3601 is out of range; expected 1 to 3600"),
    .config(
        "bad listen address", "version: 1\nserver:\n  listen: localhost\n",
        "config.yaml:3:11: error: server.listen: expected host:port, found 'localhost'"),
    .config(
        "bad upload type", "version: 1\nserver:\n  uploadTypes: [image/png, png]\n",
        "config.yaml:3:28: error: server.uploadTypes[1]: 'png' is not a MIME type like image/png"),
    .config(
        "short api key", "version: 1\nserver:\n  apiKey: ${KEY}\n",
        "config.yaml:3:11: error: server.apiKey: an API key needs at least 16 characters"),
    .config(
        "misspelt string key", "version: 1\nstrings:\n  THREAD_SUBSCRIBE_TOAST: Hi\n",
        "config.yaml:3:27: error: strings.THREAD_SUBSCRIBE_TOAST: 'THREAD_SUBSCRIBE_TOAST' is not one of the built-in keys; did you mean 'THREAD_SUBSCRIBED_TOAST'?"
    ),
    .config(
        "seed member unknown", base + "\n        - { uid: bobby }\n",
        "config.yaml:12:18: error: seed.groups[0].members[1].uid: unknown user 'bobby': not in seed.users; did you mean 'bob'?"
    ),
    .config(
        "seed duplicate user", "version: 1\nseed:\n  users:\n    - {uid: a, name: A}\n    - {uid: a, name: B}\n",
        "config.yaml:5:13: error: seed.users[1].uid: user 'a' is already defined at seed.users[0]"),
    .config(
        "seed reserved uid", "version: 1\nseed:\n  users:\n    - {uid: app_system, name: S}\n",
        "config.yaml:4:13: error: seed.users[0].uid: 'app_system' is reserved for system actions"),
    .config(
        "seed invalid uid", "version: 1\nseed:\n  users:\n    - {uid: 'a b', name: S}\n",
        "config.yaml:4:13: error: seed.users[0].uid: 'a b' is not a valid uid (1–100 of A–Z, a–z, 0–9, _, -)"),
    .config(
        "second owner",
        "version: 1\nseed:\n  users: [{uid: a, name: A}, {uid: b, name: B}]\n  groups:\n    - {guid: g, name: G, owner: a, members: [{uid: b, scope: owner}]}\n",
        "config.yaml:5:62: error: seed.groups[0].members[0].scope: a group has one owner, set with 'owner'; use admin here"
    ),
    // Bot files.
    .bot(
        "tab in a bot file", "name: b\nuser:\n\tuid: x\n",
        "bots/b.yaml:3:1: error: found character that cannot start any token (a tab; YAML indents with spaces only)"),
    .bot(
        "bad alias in a bot file", "name: b\nuser: *who\n",
        "bots/b.yaml:2:7: error: unknown alias '*who': no anchor '&who' is defined before it"),
    .bot(
        "unknown trigger", "name: b\nuser: {uid: x}\nrules:\n  - on: thread_replies\n    do: [delete]\n",
        "bots/b.yaml:4:9: error: rules[0].on: unknown trigger 'thread_replies'; did you mean 'thread_reply'? (triggers: message, thread_reply, mention, command, pinned, unpinned, edited, deleted, member_joined, thread_subscribed, thread_unsubscribed, saved, unsaved, reaction_added, reaction_removed, schedule, webhook)"
    ),
    .bot(
        "trigger without its argument", "name: b\nuser: {uid: x}\nrules:\n  - on: command\n    do: [delete]\n",
        "bots/b.yaml:4:9: error: rules[0].on: trigger 'command' needs an argument: write `on: {command: ...}`"),
    .bot(
        "misspelt pin identity",
        "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    do:\n      - pin: {as: app_sytem}\n",
        "bots/b.yaml:6:14: error: rules[0].do[0].pin: 'as' is 'app_system' or 'bot', found 'app_sytem'; did you mean 'app_system'?"
    ),
    .bot(
        "unknown action", "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    do:\n      - pinn\n",
        "bots/b.yaml:6:9: error: rules[0].do[0]: unknown action 'pinn'; did you mean 'pin'? (actions: reply, reply_in_thread, quote_reply, direct_message, pin, unpin, save, react, unreact, subscribe, unsubscribe, delete, kick, ban, plugin)"
    ),
    .bot(
        "action missing text", "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    do:\n      - reply\n",
        "bots/b.yaml:6:9: error: rules[0].do[0]: action 'reply' needs the text to send"),
    .bot(
        "missing do", "name: b\nuser: {uid: x}\nrules:\n  - on: message\n",
        "bots/b.yaml:4:5: error: rules[0]: missing required key 'do'"),
    .bot(
        "missing on", "name: b\nuser: {uid: x}\nrules:\n  - do: [delete]\n",
        "bots/b.yaml:4:5: error: rules[0]: missing required key 'on'"),
    .bot(
        "rules not a list", "name: b\nuser: {uid: x}\nrules:\n  on: message\n",
        "bots/b.yaml:4:3: error: rules: expected a list, found a mapping"),
    .bot(
        "unknown hears", "name: b\nuser: {uid: x}\nhears: mention\n",
        "bots/b.yaml:3:8: error: hears: unknown value 'mention'; did you mean 'mentions'? (expected one of: all, commands, mentions)"
    ),
    .bot(
        "unknown key in a condition",
        "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    when: {thread: true}\n    do: [delete]\n",
        "bots/b.yaml:5:12: error: rules[0].when.thread: unknown key 'thread'; did you mean 'threaded'?"),
    .bot(
        "invalid regular expression",
        "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    when:\n      text_matches: \"(abc\"\n    do: [delete]\n",
        "bots/b.yaml:6:21: error: rules[0].when.text_matches: invalid regular expression: missing closing parenthesis at offset 4"
    ),
    .bot(
        "unknown group", "name: b\nuser: {uid: x}\ngroups: [genral]\n",
        "bots/b.yaml:3:10: error: groups[0]: unknown group 'genral'; did you mean 'general'? (not in seed.groups)"),
    .bot(
        "unknown group in a condition",
        "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    when: {groups: random}\n    do: [delete]\n",
        "bots/b.yaml:5:20: error: rules[0].when.groups: unknown group 'random' (not in seed.groups)"),
    .bot(
        "unknown sender",
        "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    when: {from: [alicia]}\n    do: [delete]\n",
        "bots/b.yaml:5:19: error: rules[0].when.from[0]: unknown user 'alicia'; did you mean 'alice'? (not seeded and not a bot)"
    ),
    .bot(
        "pin as app_system without system",
        "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    do:\n      - pin: {as: app_system}\n",
        "bots/b.yaml:6:14: error: rules[0].do[0].pin: pinning as app_system needs `system: true` on the bot"),
    .bot(
        "unknown plugin reference",
        "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    do:\n      - plugin: karma\n",
        "bots/b.yaml:6:17: error: rules[0].do[0].plugin: unknown plugin 'karma' (not in this bot's plugins)"),
    .bot(
        "unregistered Swift plugin", "name: b\nuser: {uid: x}\nplugins:\n  - name: karma\n",
        "bots/b.yaml:4:11: error: plugins[0].name: unknown plugin 'karma' (no Swift plugin has this name; give `exec` or `url` for an external one)"
    ),
    .bot(
        "empty exec", "name: b\nuser: {uid: x}\nplugins:\n  - name: k\n    exec: []\n",
        "bots/b.yaml:5:11: error: plugins[0].exec: exec needs a command"),
    .bot(
        "unknown string in a template",
        "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    do:\n      - reply: \"{strings.THREAD_FOLLOWED}\"\n",
        "bots/b.yaml:6:16: error: rules[0].do[0].reply: unknown string 'THREAD_FOLLOWED' (not in the strings table)"),
    .bot(
        "unknown placeholder",
        "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    do:\n      - reply: \"hi {sender.nam}\"\n",
        "bots/b.yaml:6:16: error: rules[0].do[0].reply: unknown placeholder '{sender.nam}'; sender has {sender.name}, {sender.uid}"
    ),
    .bot(
        "unclosed template brace",
        "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    do:\n      - reply: \"hi {sender.name\"\n",
        "bots/b.yaml:6:16: error: rules[0].do[0].reply: unclosed '{' in template (write '{{' for a literal brace)"),
    .bot(
        "bad cron",
        "name: b\nuser: {uid: x}\nrules:\n  - on: {schedule: \"61 * * * *\", group: general}\n    do: [{reply: hi}]\n",
        "bots/b.yaml:4:20: error: rules[0].on.schedule: minute '61' is outside 0–59"),
    .bot(
        "reserved bot uid", "name: b\nuser: {uid: app_system}\n",
        "bots/b.yaml:2:13: error: user.uid: 'app_system' is reserved; give the bot its own uid and `system: true`"),
    .bot(
        "bot uid of a seeded person", "name: b\nuser: {uid: alice}\n",
        "bots/b.yaml:2:13: error: user.uid: user 'alice' is a seeded person in config.yaml, not a bot"),
    .bots(
        "duplicate bot name", ["a.yaml": "name: same\nuser: {uid: x1}\n", "b.yaml": "name: same\nuser: {uid: x2}\n"],
        "bots/b.yaml:1:7: error: name: another bot is named 'same' (bots/a.yaml:1:7)"),
    .bots(
        "duplicate bot user", ["a.yaml": "name: one\nuser: {uid: x}\n", "b.yaml": "name: two\nuser: {uid: x}\n"],
        "bots/b.yaml:2:13: error: user.uid: bot 'one' already uses user 'x' (bots/a.yaml:2:13)"),
    // A value wrapped in another type is told as its own: a scope, alone or in a list.
    .bot(
        "unknown sender scope",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: message\n    when: {sender_scope: boss}\n    do: [{reply: hi}]\n",
        "bots/b.yaml:5:26: error: rules[0].when.sender_scope: unknown value 'boss' (expected one of: participant, moderator, admin, owner)"
    ),
    .bot(
        "misspelt sender scope in a list",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: message\n    when: {sender_scope: [owner, admn]}\n    do: [{reply: hi}]\n",
        "bots/b.yaml:5:34: error: rules[0].when.sender_scope[1]: unknown value 'admn'; did you mean 'admin'? (expected one of: participant, moderator, admin, owner)"
    ),
    .bot(
        "empty reply text",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: message\n    do: [{reply_in_thread: \" \"}]\n",
        "bots/b.yaml:5:28: error: rules[0].do[0].reply_in_thread: the text is empty, and a message needs text (ERR_EMPTY_MESSAGE_TEXT)"
    ),
    .bot(
        "misspelt schedule time zone",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: {schedule: \"0 9 * * *\", group: general, timezone: Europe/Berln}\n    do: [{reply: hi}]\n",
        "bots/b.yaml:4:59: error: rules[0].on.timezone: unknown time zone 'Europe/Berln'; did you mean 'Europe/Berlin'? (an IANA name such as Europe/Berlin)"
    ),
    .bot(
        "time zone beside a command",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: {command: x, timezone: UTC}\n    do: [{reply: hi}]\n",
        "bots/b.yaml:4:22: error: rules[0].on.timezone: unknown key 'timezone' (known keys: command, mention, reaction_added, reaction_removed, schedule, webhook)"
    ),
    .bot(
        "conversation beside a command",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: {command: standup, group: general}\n    do: [{reply: hi}]\n",
        "bots/b.yaml:4:28: error: rules[0].on.group: unknown key 'group' (known keys: command, mention, reaction_added, reaction_removed, schedule, webhook)"
    ),
    .bot(
        "short webhook secret",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: {webhook: push, group: general, secret: hunter2}\n    do: [{reply: hi}]\n",
        "bots/b.yaml:4:49: error: rules[0].on.secret: a webhook secret needs at least 16 characters; write ${SOME_VARIABLE} to keep it out of the file"
    ),
    .bot(
        "two rules of one name",
        "name: b\nuser: {uid: b1}\nrules:\n  - name: daily\n    on: message\n    do: [{reply: a}]\n  - name: daily\n    on: message\n    do: [{reply: b}]\n",
        "bots/b.yaml:7:11: error: rules[1].name: another rule of this bot is named 'daily' (bots/b.yaml:4:11)"
    ),
    .bot(
        "misspelt pin overflow",
        "name: b\nuser: {uid: x}\nsystem: true\nrules:\n  - on: message\n    do:\n      - pin: {as: app_system, when_full: unpin_olderst}\n",
        "bots/b.yaml:7:42: error: rules[0].do[0].pin.when_full: unknown value 'unpin_olderst'; did you mean 'unpin_oldest'? (expected one of: refuse, unpin_oldest)"
    ),
    .bot(
        "help on a rule that is not a command",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: message\n    help: says hi\n    do: [{reply: hi}]\n",
        "bots/b.yaml:5:11: error: rules[0].help: `help` describes a command for the bot's `help` answer, and this rule's trigger is not `{command: NAME}`"
    ),
    .bot(
        "empty help",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: {command: ping}\n    help: \" \"\n    do: [{reply: pong}]\n",
        "bots/b.yaml:5:11: error: rules[0].help: `help` is empty: say in a few words what the command does"
    ),
    .bot(
        "plugin with exec and url",
        "name: b\nuser: {uid: x}\nplugins:\n  - name: k\n    exec: [./k]\n    url: http://127.0.0.1:9/k\n",
        "bots/b.yaml:6:10: error: plugins[0].url: give `exec` or `url`, not both"),
    .bot(
        "plugin url that is not http",
        "name: b\nuser: {uid: x}\nplugins:\n  - name: k\n    url: ftp://example.com/k\n",
        "bots/b.yaml:5:10: error: plugins[0].url: the URL's scheme is 'ftp'; expected http or https"),
    .bot(
        "plugin url without a host",
        "name: b\nuser: {uid: x}\nplugins:\n  - name: k\n    url: \"https:///k\"\n",
        "bots/b.yaml:5:10: error: plugins[0].url: the URL 'https:///k' has no host"),
    .bot(
        "plugin secret without a url",
        "name: b\nuser: {uid: x}\nplugins:\n  - name: k\n    exec: [./k]\n    secret: abcdefghijklmnopq\n",
        "bots/b.yaml:6:13: error: plugins[0].secret: `secret` signs the posts of a plugin with `url`; this one has none"
    ),
    .bot(
        "short plugin secret",
        "name: b\nuser: {uid: x}\nplugins:\n  - name: k\n    url: https://example.com/k\n    secret: hunter2\n",
        "bots/b.yaml:6:13: error: plugins[0].secret: a plugin's secret needs at least 16 characters; write ${SOME_VARIABLE} to keep it out of the file"
    ),
    .bot(
        "plugin header Perch sets itself",
        "name: b\nuser: {uid: x}\nplugins:\n  - name: k\n    url: https://example.com/k\n    headers: {X-Hub-Signature-256: x}\n",
        "bots/b.yaml:6:36: error: plugins[0].headers.X-Hub-Signature-256: Perch sets 'X-Hub-Signature-256' on each post itself"
    ),
    .bot(
        "plugin header that is no header name",
        "name: b\nuser: {uid: x}\nplugins:\n  - name: k\n    url: https://example.com/k\n    headers: {\"Bad Name\": x}\n",
        "bots/b.yaml:6:27: error: plugins[0].headers.Bad Name: 'Bad Name' is not a header name"),
    .bot(
        "plugin header of two lines",
        "name: b\nuser: {uid: x}\nplugins:\n  - name: k\n    url: https://example.com/k\n    headers: {X-Token: \"a\\r\\nX-Evil: b\"}\n",
        "bots/b.yaml:6:24: error: plugins[0].headers.X-Token: a header's value is one line"),
    .bot(
        "plugin headers without a url",
        "name: b\nuser: {uid: x}\nplugins:\n  - name: k\n    exec: [./k]\n    headers: {X-Token: a}\n",
        "bots/b.yaml:6:14: error: plugins[0].headers: `headers` go with the posts of a plugin with `url`; this one has none"
    ),
    .bot(
        "plugin lifecycle without a url",
        "name: b\nuser: {uid: x}\nplugins:\n  - name: k\n    exec: [./k]\n    lifecycle: true\n",
        "bots/b.yaml:6:16: error: plugins[0].lifecycle: `lifecycle` asks a plugin with `url` to be posted start and stop; Swift and `exec` plugins always get them"
    ),
    // Typed command arguments (`usage`).
    .bot(
        "usage on a rule that is no command",
        "name: b\nuser: {uid: x}\nrules:\n  - on: message\n    usage: \"<x>\"\n    do: [{reply: hi}]\n",
        "bots/b.yaml:5:12: error: rules[0].usage: `usage` declares a command's arguments; this rule is no command"
    ),
    .bot(
        "a usage with an unknown argument kind",
        "name: b\nuser: {uid: x}\nrules:\n  - on: {command: a}\n    usage: \"<x:color>\"\n    do: [{reply: hi}]\n",
        "bots/b.yaml:5:12: error: rules[0].usage: 'color' is no argument kind; one of user, group, message, duration, integer, word, rest"
    ),
    .bot(
        "a usage whose rest is not last",
        "name: b\nuser: {uid: x}\nrules:\n  - on: {command: a}\n    usage: \"<a:rest> <b>\"\n    do: [{reply: hi}]\n",
        "bots/b.yaml:5:12: error: rules[0].usage: a rest argument takes the rest: it comes last"
    ),
    .bot(
        "a usage with a required argument after an optional one",
        "name: b\nuser: {uid: x}\nrules:\n  - on: {command: a}\n    usage: \"[a] <b>\"\n    do: [{reply: hi}]\n",
        "bots/b.yaml:5:12: error: rules[0].usage: the required 'b' comes after an optional one"
    ),
    .bot(
        "a usage naming an argument twice",
        "name: b\nuser: {uid: x}\nrules:\n  - on: {command: a}\n    usage: \"<a> <a:integer>\"\n    do: [{reply: hi}]\n",
        "bots/b.yaml:5:12: error: rules[0].usage: the argument 'a' is named twice"
    ),
    .bot(
        "a usage taking a reserved name",
        "name: b\nuser: {uid: x}\nrules:\n  - on: {command: a}\n    usage: \"<args>\"\n    do: [{reply: hi}]\n",
        "bots/b.yaml:5:12: error: rules[0].usage: 'args' is a placeholder of its own; name the argument otherwise"
    ),
    .bot(
        "a usage word that is no argument",
        "name: b\nuser: {uid: x}\nrules:\n  - on: {command: a}\n    usage: \"when\"\n    do: [{reply: hi}]\n",
        "bots/b.yaml:5:12: error: rules[0].usage: 'when' is not an argument; write <name:kind> or [name:kind]"
    ),
    .bot(
        "an empty usage",
        "name: b\nuser: {uid: x}\nrules:\n  - on: {command: a}\n    usage: \"\"\n    do: [{reply: hi}]\n",
        "bots/b.yaml:5:12: error: rules[0].usage: a usage names at least one argument"
    ),
    .bot(
        "a usage with an argument name in capitals",
        "name: b\nuser: {uid: x}\nrules:\n  - on: {command: a}\n    usage: \"<Big>\"\n    do: [{reply: hi}]\n",
        "bots/b.yaml:5:12: error: rules[0].usage: '<Big>': an argument's name is a lower-case word (letters, digits, _)"
    ),
    .bot(
        "a field of a typed argument that has none",
        "name: b\nuser: {uid: x}\nrules:\n  - on: {command: a}\n    usage: \"<when:duration> <text:rest>\"\n    do: [{reply: \"{when.seconds} {text.seconds}\"}]\n  - on: {command: b}\n    do: [{reply: hi}]\n",
        "bots/b.yaml:6:18: error: rules[0].do[0].reply: unknown placeholder '{text.seconds}' (neither a named capture of text_matches nor an argument of usage)"
    ),
    // Reactions: as triggers (Slack's reaction_added / reaction_removed) and as actions.
    .bot(
        "a reaction with a space in a trigger",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: {reaction_added: [\"📌\", \"a b\"]}\n    do: [pin]\n",
        "bots/b.yaml:4:32: error: rules[0].on.reaction_added[1]: 'a b' is no reaction: it must have no spaces or control characters"
    ),
    .bot(
        "an empty reaction to make",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: message\n    do: [{react: \"\"}]\n",
        "bots/b.yaml:5:18: error: rules[0].do[0].react: '' is no reaction: it must be 1–64 bytes of UTF-8"),
    .bot(
        "react without its reaction",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: message\n    do: [react]\n",
        "bots/b.yaml:5:10: error: rules[0].do[0]: action 'react' needs the reaction: `react: \"👀\"`"),
    .bot(
        "react on a join",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: member_joined\n    do: [{react: \"👋\"}]\n",
        "bots/b.yaml:5:18: error: rules[0].do[0].react: 'react' acts on a message, and a member_joined event has none (reply, direct_message, kick, ban and plugin act on the member and the group)"
    ),
    .bot(
        "reaction placeholder on a message",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: message\n    do: [{reply: \"you said {reaction}\"}]\n",
        "bots/b.yaml:5:18: error: rules[0].do[0].reply: {reaction} is only set for reaction_added and reaction_removed triggers"
    ),
    .bot(
        "text condition on a reaction",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: reaction_added\n    when: {text_matches: ship}\n    do: [pin]\n",
        "bots/b.yaml:5:11: error: rules[0].when: text conditions apply to message triggers (message, thread_reply, mention, command, edited)"
    ),
    .bot(
        "who acted, on a new message",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: message\n    do: [{reply: \"{actor.name}\"}]\n",
        "bots/b.yaml:5:18: error: rules[0].do[0].reply: {actor...} is only set for pinned, unpinned, edited, deleted, thread_subscribed, thread_unsubscribed, saved and unsaved triggers"
    ),
    .bot(
        "who acted, misspelt",
        "name: b\nuser: {uid: b1}\nrules:\n  - on: pinned\n    do: [{reply: \"{actor.nmae}\"}]\n",
        "bots/b.yaml:5:18: error: rules[0].do[0].reply: unknown placeholder '{actor.nmae}'; actor has {actor.name}, {actor.uid}"
    ),
]

@Suite struct BrokenConfigTests {
    @Test(arguments: brokenCases)
    func reportsTheExactFinding(_ broken: BrokenCase) throws {
        let fixture = try ConfigFixture(config: broken.config ?? ConfigFixture.baseConfig, bots: broken.bots)
        defer { fixture.cleanup() }
        let loaded = fixture.load(environment: ["KEY": "short"])
        #expect(!loaded.isValid)
        let rendered = loaded.findings.map(\.description)
        #expect(rendered.contains(broken.expected), "findings were:\n\(rendered.joined(separator: "\n"))")
    }

    @Test func theTableIsLargeEnough() {
        #expect(brokenCases.count >= 40)
    }
}

@Suite struct FuzzCorpusTests {
    /// The fuzz seed corpus (`Fuzz/corpus`) holds every case of the table; `PERCH_WRITE_CORPUS=1`
    /// rewrites it after the table changes.
    @Test func corpusHoldsTheTable() throws {
        let directory = ConfigLoadingTests.repositoryRoot + "/Fuzz/corpus"
        let texts = brokenCases.flatMap { [$0.config].compactMap { $0 } + $0.bots.values.sorted() }
        let manifest = Self.manifest(brokenCases)
        if ProcessInfo.processInfo.environment["PERCH_WRITE_CORPUS"] == "1" {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for (index, text) in texts.enumerated() {
                try text.write(toFile: directory + "/case-\(index).yaml", atomically: true, encoding: .utf8)
            }
            try manifest.write(toFile: directory + "/findings.tsv", atomically: true, encoding: .utf8)
        }
        for (index, text) in texts.enumerated() {
            let stored = try String(contentsOfFile: directory + "/case-\(index).yaml", encoding: .utf8)
            #expect(stored == text, "Fuzz/corpus/case-\(index).yaml is stale: run PERCH_WRITE_CORPUS=1 swift test")
        }
        let stored = try String(contentsOfFile: directory + "/findings.tsv", encoding: .utf8)
        #expect(stored == manifest, "Fuzz/corpus/findings.tsv is stale: run PERCH_WRITE_CORPUS=1 swift test")
    }

    /// One line a corpus file: its name, whether it is a config or a bot file, whether the case's
    /// finding is in it, and the finding (the schema test, Tests/scripts, reads it).
    static func manifest(_ cases: [BrokenCase]) -> String {
        var lines: [String] = []
        for broken in cases {
            let files =
                (broken.config.map { [("config", "config.yaml", $0)] } ?? [])
                + broken.bots.sorted { $0.value < $1.value }.map { ("bot", "bots/" + $0.key, $0.value) }
            for (kind, name, _) in files {
                let here = broken.expected.hasPrefix(name + ":")
                let line = "case-\(lines.count).yaml\t\(kind)\t\(here)\t" + broken.expected
                lines.append(line.replacingOccurrences(of: "\n", with: " "))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
