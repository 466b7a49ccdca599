/// A value the decoder puts where a configuration value was wrong or missing, so decoding goes
/// on and every other finding is reported too. A configuration with findings is never run, so the
/// placeholder is never used for real.
public protocol ConfigPlaceholder {
    static var placeholder: Self { get }
}

extension String: ConfigPlaceholder { public static var placeholder: String { "" } }
extension Bool: ConfigPlaceholder { public static var placeholder: Bool { false } }
extension Int: ConfigPlaceholder { public static var placeholder: Int { 0 } }
extension Int64: ConfigPlaceholder { public static var placeholder: Int64 { 0 } }
extension UInt16: ConfigPlaceholder { public static var placeholder: UInt16 { 0 } }
extension Double: ConfigPlaceholder { public static var placeholder: Double { 0 } }
extension Array: ConfigPlaceholder { public static var placeholder: [Element] { [] } }
extension Dictionary: ConfigPlaceholder { public static var placeholder: [Key: Value] { [:] } }
extension Optional: ConfigPlaceholder { public static var placeholder: Wrapped? { nil } }

/// A closed set of names (`hears: all | commands | mentions`): a wrong one is reported with the
/// valid names and the closest one.
public protocol ConfigChoice: CaseIterable, RawRepresentable<String>, Decodable {}

/// The non-generic face of ``ConfigChoice``, for the decoder.
protocol ConfigChoiceNames {
    static var choiceNames: [String] { get }
}

extension ConfigChoice {
    static var choiceNames: [String] { allCases.map(\.rawValue) }
}
