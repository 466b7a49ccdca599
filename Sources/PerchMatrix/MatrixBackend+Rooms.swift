import PerchChat
import PerchConfig
import PerchHost
import PerchService

/// The mapped rooms at start: each bot joined to the rooms its file names, and each room's state
/// recorded in the store without events.
extension MatrixBackend {
    /// Joins each bot's account to the rooms of its `groups` it is not in (accepting an invite, or
    /// joining a public room); one it cannot join is logged, and the bot hears nothing there.
    func joinRooms(_ loaded: LoadedConfiguration, logger: HostLogger) async throws {
        let accounts = allAccounts
        for bot in loaded.bots.map(\.bot).sorted(by: { $0.name < $1.name }) {
            guard let account = accounts[bot.user.uid] else { continue }
            let joined = Set(try await waitingOut { try await account.client.joinedRooms() })
            for group in bot.groups {
                guard let room = directory.room(ofGroup: group.guid), !joined.contains(room) else { continue }
                do {
                    _ = try await account.client.join(room)
                    logger.info("matrix: joined", ["bot": bot.user.uid, "group": group.guid, "room": room])
                } catch {
                    logger.error(
                        "matrix: bot \(bot.name) is not in the room of group \(group.guid) (\(room)) and cannot join "
                            + "it: \(error); invite its account (\(account.matrixID)) there",
                        ["bot": bot.user.uid])
                }
            }
        }
    }

    /// Records each mapped room's state (its name, its members with their scopes, its pins) in the
    /// store without events, read by an account in the room; an encrypted room is reported.
    func mirrorRooms(service: ChatService, logger: HostLogger) async throws {
        let accounts = allAccounts.values.sorted { $0.uid < $1.uid }
        let translation = translation()
        var memberships: [String: Set<String>] = [:]
        for account in accounts {
            memberships[account.uid] = Set(try await waitingOut { try await account.client.joinedRooms() })
        }
        for (guid, room) in directory.groupRooms.sorted(by: { $0.key < $1.key }) {
            guard let reader = accounts.first(where: { memberships[$0.uid]?.contains(room) == true }) else {
                logger.error("matrix: no bot is in the room of group \(guid) (\(room)): nothing there reaches a bot")
                continue
            }
            let events = try await waitingOut { try await reader.client.roomState(room) }.compactMap(MatrixEvent.init)
            var state = RoomState()
            for event in events { state.apply(event) }
            directory.withState(of: room) { $0 = state }
            if state.encrypted {
                logger.error(
                    "matrix: the room of group \(guid) (\(room)) is encrypted, and Perch does not read or send "
                        + "encrypted messages: its bots hear nothing there (docs/matrix.md, \"Encrypted rooms\")")
            }
            var facts: [MirroredFact] = [translation.group(guid, state)] + translation.people(of: state)
            facts.append(.memberList(guid: guid, members: translation.members(of: state)))
            // The pinned messages the store has never seen come in as history, so the pins map.
            for id in state.pinned where try await service.localMessage(external: id, connector: Self.connector) == nil
            {
                guard let json = try? await reader.client.event(id, in: room), let event = MatrixEvent(json),
                    event.type == "m.room.message"
                else { continue }
                facts.append(.message(translation.message(event, in: .group(guid), history: true)))
            }
            facts.append(.pins(guid: guid, pinned: state.pinned, by: translation.uid(state.creators.first ?? "")))
            try await service.mirror(facts, connector: Self.connector, announcing: false)
        }
    }

    /// The translation of this backend's events: its bots' accounts, its homeserver.
    func translation() -> EventTranslation {
        EventTranslation(
            bots: Dictionary(uniqueKeysWithValues: allAccounts.values.map { ($0.matrixID, $0.uid) }),
            homeserver: homeserver)
    }

    /// Runs a call, waiting out an unreachable homeserver or a 429 (a refusal for good throws).
    func waitingOut<T>(_ call: () async throws -> T) async throws -> T {
        var failures = 0
        while true {
            do {
                return try await call()
            } catch let error as MatrixError {
                guard error.isTransient, !Task.isCancelled else { throw HostError("matrix: \(error)") }
                failures += 1
                try await Task.sleep(for: backoff(after: failures, asked: error.retryAfter))
            }
        }
    }
}
