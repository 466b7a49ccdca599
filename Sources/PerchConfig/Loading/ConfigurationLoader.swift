import Foundation
import PerchChat
import PerchRegex
import PerchYAML

/// A configuration directory, loaded and checked: `config.yaml` and every `bots/*.yaml`.
public struct LoadedConfiguration: Sendable {
    public var configPath: String
    public var config: PerchConfiguration?
    public var bots: [LoadedBot]
    public var findings: [Finding]

    public var errors: [Finding] { findings.filter { $0.severity == .error } }
    public var isValid: Bool { config != nil && errors.isEmpty }
    public var ruleCount: Int { bots.reduce(0) { $0 + $1.bot.rules.count } }

    /// The directory holding config.yaml, against which relative paths resolve.
    public var baseDirectory: String { (configPath as NSString).deletingLastPathComponent }

    /// `path` resolved against the configuration's directory.
    public func resolve(_ path: String) -> String {
        path.hasPrefix("/") ? path : (baseDirectory.isEmpty ? path : baseDirectory + "/" + path)
    }
}

/// A bot file, decoded, with where its values were written.
public struct LoadedBot: Sendable {
    public var file: String
    public var bot: BotConfiguration
    public var locations: LocationIndex
    /// What decoding refused: the checks across files say nothing more about it.
    let refused: RefusedPaths

    init(file: String, bot: BotConfiguration, locations: LocationIndex, decoding: [Finding]) {
        self.file = file
        self.bot = bot
        self.locations = locations
        refused = RefusedPaths(decoding)
    }
}

/// Loads and validates a configuration, collecting every finding of every file.
public struct ConfigurationLoader: Sendable {
    public var environment: [String: String]
    /// Names of the Swift plugins this build registers; `plugins` entries without `exec` must name one.
    public var swiftPlugins: Set<String>

    public init(environment: [String: String] = ProcessInfo.processInfo.environment, swiftPlugins: Set<String> = []) {
        self.environment = environment
        self.swiftPlugins = swiftPlugins
    }

    /// Loads `configPath` and the bots directory it names. File names in findings are as given
    /// (relative paths stay relative, so editors and tests see `bots/x.yaml`).
    public func load(configPath: String) -> LoadedConfiguration {
        var result = LoadedConfiguration(configPath: configPath, config: nil, bots: [], findings: [])
        guard let data = FileManager.default.contents(atPath: configPath) else {
            result.findings.append(
                Finding(
                    location: .init(file: configPath, line: 1, column: 1),
                    message: "cannot read the configuration file"))
            return result
        }
        let (config, locations, findings) = decode(PerchConfiguration.self, bytes: Array(data), file: configPath)
        result.findings += findings
        if let config, let locations {
            result.config = config
            let refused = RefusedPaths(findings)
            result.findings += ConfigValidator(config: config, locations: locations, refused: refused).validate()
            result.bots = loadBots(
                from: result.resolve(config.botsDirectory),
                shownAs: displayPath(
                    config.botsDirectory,
                    configPath: configPath), into: &result.findings)
            result.findings += BotValidator(
                config: config, bots: result.bots, swiftPlugins: swiftPlugins,
                programs: programs(from: result.baseDirectory), configRefused: refused
            ).validate()
        }
        result.findings.sort { ($0.location, $0.message) < ($1.location, $1.message) }
        return result
    }

    /// Loads a configuration held in memory: config.yaml's bytes and bot files by name. The
    /// fuzzer and tests use it; findings name `config.yaml` and `bots/<name>`.
    public func load(config: [UInt8], bots: [(name: String, bytes: [UInt8])]) -> LoadedConfiguration {
        var result = LoadedConfiguration(configPath: "config.yaml", config: nil, bots: [], findings: [])
        let (decoded, locations, findings) = decode(PerchConfiguration.self, bytes: config, file: "config.yaml")
        result.findings += findings
        guard let decoded, let locations else { return result }
        result.config = decoded
        let refused = RefusedPaths(findings)
        result.findings += ConfigValidator(config: decoded, locations: locations, refused: refused).validate()
        for (name, bytes) in bots {
            let (bot, botLocations, found) = decode(BotConfiguration.self, bytes: bytes, file: "bots/" + name)
            result.findings += found
            if let bot, let botLocations {
                result.bots.append(
                    LoadedBot(file: "bots/" + name, bot: bot, locations: botLocations, decoding: found))
            }
        }
        result.findings += BotValidator(
            config: decoded, bots: result.bots, swiftPlugins: swiftPlugins, programs: programs(from: ""),
            configRefused: refused
        ).validate()
        return result
    }

    /// How the host would find a plugin's program, started in `directory` with this environment.
    func programs(from directory: String) -> ProgramFinder {
        ProgramFinder(directory: directory, searchPath: environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin")
    }

    /// Decodes one YAML text (a config or bot file) into `T`, with its findings.
    public func decode<T: Decodable>(_ type: T.Type, bytes: [UInt8], file: String)
        -> (T?, LocationIndex?, [Finding])
    {
        let loaded = YAMLLoader(environment: environment).load(bytes, file: file)
        guard let root = loaded.root else { return (nil, nil, loaded.findings) }
        let decoded = ConfigDecoder().decode(type, from: root)
        // The loader's findings (an unset variable) name the value they are in, as the decoder's do,
        // so that only that value goes unchecked; one outside every decoded value refuses nothing
        // more (a decoder's finding covers it: an unknown key, say).
        let located = loaded.findings.map { finding in
            guard finding.path.isEmpty, let path = decoded.locations.path(at: finding.location), !path.isEmpty
            else { return finding }
            var placed = finding
            placed.path = path
            return placed
        }
        return (decoded.value, decoded.locations, located + decoded.findings)
    }

    func displayPath(_ directory: String, configPath: String) -> String {
        if directory.hasPrefix("/") { return directory }
        let base = (configPath as NSString).deletingLastPathComponent
        return base.isEmpty ? directory : base + "/" + directory
    }

    /// Whether a file of the bots directory, by its name, is a bot file: `*.yaml` or `*.yml`, not
    /// hidden (an editor's or an atomic write's temporary file is neither).
    public static func isBotFile(_ name: String) -> Bool {
        (name.hasSuffix(".yaml") || name.hasSuffix(".yml")) && !name.hasPrefix(".")
    }

    func loadBots(from directory: String, shownAs shown: String, into findings: inout [Finding]) -> [LoadedBot] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            return []
        }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter(Self.isBotFile)
            .sorted()
        var bots: [LoadedBot] = []
        for name in names {
            let file = shown + "/" + name
            guard let data = FileManager.default.contents(atPath: directory + "/" + name) else {
                findings.append(
                    Finding(location: .init(file: file, line: 1, column: 1), message: "cannot read the file"))
                continue
            }
            let (bot, locations, found) = decode(BotConfiguration.self, bytes: Array(data), file: file)
            findings += found
            if let bot, let locations {
                bots.append(LoadedBot(file: file, bot: bot, locations: locations, decoding: found))
            }
        }
        return bots
    }
}
