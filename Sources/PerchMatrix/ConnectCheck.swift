import Foundation
import PerchConfig

/// `perch check --connect` on the Matrix backend: what only the homeserver can tell. Each bot's
/// account signs in (`whoami`); each mapped room resolves; each bot is in the rooms of its
/// `groups` and has there the power its rules need (pin, unpin, delete, kick, ban); no mapped room
/// is encrypted; and whether the homeserver offers thread subscriptions (MSC4306).
public struct ConnectCheck: Sendable {
    public struct Finding: Sendable, CustomStringConvertible {
        public enum Severity: String, Sendable { case error, warning, ok }
        public var severity: Severity
        public var message: String
        public var description: String { "matrix: \(severity.rawValue): \(message)" }
    }

    let loaded: LoadedConfiguration

    public init(_ loaded: LoadedConfiguration) { self.loaded = loaded }

    /// The power level each action needs, by what the room's power levels call it.
    static func powerNeeded(by action: Action) -> String? {
        switch action {
        case .pin, .unpin: return "m.room.pinned_events"
        case .delete: return "redact"
        case .kick: return "kick"
        case .ban: return "ban"
        default: return nil
        }
    }

    public func run() async -> [Finding] {
        guard let config = loaded.config, config.backend == .matrix,
            let homeserver = URL(string: config.matrix.homeserver)
        else { return [Finding(severity: .error, message: "config.yaml does not say backend: matrix")] }
        var findings: [Finding] = []
        let bots = loaded.bots.map(\.bot).sorted { $0.name < $1.name }
        let anonymous = MatrixClient(homeserver: homeserver, token: "")
        do {
            let offered = try await anonymous.versions().unstable[MatrixClient.threadSubscriptionsFeature] == true
            let wanted = bots.contains { bot in
                bot.rules.contains { $0.actions.contains { if case .subscribe(.self) = $0 { true } else { false } } }
            }
            findings.append(
                Finding(
                    severity: offered || !wanted ? .ok : .warning,
                    message: "the homeserver \(offered ? "offers" : "does not offer") thread subscriptions (MSC4306)"
                        + (offered || !wanted ? "" : "; the bots' `subscribe: self` are not made there")))
        } catch {
            return [Finding(severity: .error, message: "the homeserver does not answer: \(error)")]
        }
        var clients: [String: (id: String, client: MatrixClient)] = [:]
        for uid in config.matrix.accounts.keys.sorted() {
            let client = MatrixClient(homeserver: homeserver, token: config.matrix.accounts[uid]!)
            do {
                let id = try await client.whoami()
                clients[uid] = (id, client)
                findings.append(Finding(severity: .ok, message: "bot \(uid) signs in as \(id)"))
            } catch {
                findings.append(Finding(severity: .error, message: "bot \(uid) cannot sign in: \(error)"))
            }
        }
        var rooms: [String: String] = [:]
        for guid in config.matrix.rooms.keys.sorted() {
            let reference = config.matrix.rooms[guid]!
            guard reference.hasPrefix("#") else {
                rooms[guid] = reference
                continue
            }
            do {
                rooms[guid] = try await anonymous.resolve(alias: reference)
            } catch {
                findings.append(
                    Finding(severity: .error, message: "the room of \(guid), \(reference), does not resolve: \(error)"))
            }
        }
        var encrypted: Set<String> = []
        for bot in bots {
            guard let (id, client) = clients[bot.user.uid] else { continue }
            let joined = Set((try? await client.joinedRooms()) ?? [])
            for group in bot.groups {
                guard let room = rooms[group.guid] else { continue }
                guard joined.contains(room) else {
                    findings.append(
                        Finding(
                            severity: .error,
                            message:
                                "bot \(bot.name) is not in the room of \(group.guid) (\(room)): invite \(id) there "
                                + "(it joins on the invite at start)"))
                    continue
                }
                var state = RoomState()
                for event in ((try? await client.roomState(room)) ?? []).compactMap(MatrixEvent.init) {
                    state.apply(event)
                }
                if state.encrypted, encrypted.insert(room).inserted {
                    findings.append(
                        Finding(
                            severity: .warning,
                            message: "the room of \(group.guid) (\(room)) is encrypted: Perch does not read or send "
                                + "encrypted messages, and its bots hear nothing there"))
                }
                var reported: Set<String> = []
                for rule in bot.rules where rule.conditions.groups?.contains(group.guid) ?? true {
                    for action in rule.actions {
                        guard let power = Self.powerNeeded(by: action), !state.allows(id, power),
                            reported.insert(power).inserted
                        else { continue }
                        findings.append(
                            Finding(
                                severity: .error,
                                message:
                                    "bot \(bot.name) may not \(action.name) in \(group.guid): \(power) needs power "
                                    + "\(state.levelNeeded(for: power)), and \(id) has \(state.level(of: id))"))
                    }
                }
                if reported.isEmpty {
                    findings.append(
                        Finding(
                            severity: .ok, message: "bot \(bot.name) is in \(group.guid) with the power its rules need")
                    )
                }
            }
        }
        return findings
    }
}
