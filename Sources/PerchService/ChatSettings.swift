import PerchChat

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// The server-owned settings of the chat service, from config.yaml.
public struct ChatSettings: Sendable {
    public var pinsPerConversation: Int
    public var savesPerUser: Int
    public var messageTextBytes: Int
    public var pinEnabled: Bool
    public var saveEnabled: Bool
    public var notificationDefaults: NotificationPreferences

    public init(
        pinsPerConversation: Int = 100, savesPerUser: Int = 100, messageTextBytes: Int = 65_536,
        pinEnabled: Bool = true, saveEnabled: Bool = true, notificationDefaults: NotificationPreferences = .init()
    ) {
        self.pinsPerConversation = pinsPerConversation
        self.savesPerUser = savesPerUser
        self.messageTextBytes = messageTextBytes
        self.pinEnabled = pinEnabled
        self.saveEnabled = saveEnabled
        self.notificationDefaults = notificationDefaults
    }
}

/// Where the service reports internal failures (the detail stays in the log; callers see an id).
public protocol ChatLogger: Sendable {
    func error(_ message: String)
}

/// Writes to standard error.
public struct StandardErrorLogger: ChatLogger {
    public init() {}
    public func error(_ message: String) {
        var line = "perch: error: \(message)\n"
        line.withUTF8 { bytes in _ = fwrite(bytes.baseAddress, 1, bytes.count, stderr) }
    }
}
