/// A five-field cron expression (minute hour day-of-month month day-of-week), matched against a
/// time's UTC fields (the host shifts a time by its schedule's zone first).
///
/// Each field takes `*`, a number, a range `a-b`, a step `*/n` or `a-b/n`, and comma lists. The
/// month and the day of week also take names, in any case, alone or in ranges (`Jan`, `Mon-Fri`),
/// as cron does. Day-of-week 0 and 7 are Sunday. As in Vixie cron, when both day fields are restricted a day
/// matches if either does.
public struct CronExpression: Sendable, Equatable {
    public let source: String
    let minutes: Set<Int>
    let hours: Set<Int>
    let days: Set<Int>
    let months: Set<Int>
    let weekdays: Set<Int>
    let daysRestricted: Bool
    let weekdaysRestricted: Bool

    /// Parses `source`.
    /// - Throws: ``ConfigValueError`` naming the field that is wrong.
    public init(_ source: String) throws(ConfigValueError) {
        let fields = source.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 5 else {
            throw ConfigValueError(
                "a cron schedule has 5 fields (minute hour day month weekday), found \(fields.count)")
        }
        self.source = source
        minutes = try Self.field(fields[0], "minute", 0...59)
        hours = try Self.field(fields[1], "hour", 0...23)
        days = try Self.field(fields[2], "day of month", 1...31)
        months = try Self.field(fields[3], "month", 1...12, names: Self.monthNames)
        weekdays = Set(try Self.field(fields[4], "day of week", 0...7, names: Self.weekdayNames).map { $0 % 7 })
        daysRestricted = fields[2] != "*"
        weekdaysRestricted = fields[4] != "*"
    }

    static let monthNames = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
    static let weekdayNames = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]

    /// `names`, in order, stand for the field's values from its lowest (`JAN` is 1, `SUN` 0).
    static func field(_ text: String, _ name: String, _ bounds: ClosedRange<Int>, names: [String] = [])
        throws(ConfigValueError) -> Set<Int>
    {
        func number(_ token: Substring) -> Int? {
            if let value = Int(token) { return value }
            return names.firstIndex(of: token.uppercased()).map { $0 + bounds.lowerBound }
        }
        var values = Set<Int>()
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pieces = item.split(separator: "/", omittingEmptySubsequences: false)
            guard pieces.count <= 2 else { throw ConfigValueError("bad \(name) field '\(text)'") }
            var step = 1
            if pieces.count == 2 {
                guard let value = Int(pieces[1]), value > 0 else {
                    throw ConfigValueError("bad step in \(name) '\(text)'")
                }
                step = value
            }
            let range: ClosedRange<Int>
            if pieces[0] == "*" {
                range = bounds
            } else if let dash = pieces[0].firstIndex(of: "-") {
                guard let low = number(pieces[0][..<dash]),
                    let high = number(pieces[0][pieces[0].index(after: dash)...]),
                    low <= high
                else { throw ConfigValueError("bad range in \(name) '\(text)'") }
                range = low...high
            } else {
                guard let value = number(pieces[0]) else { throw ConfigValueError("bad \(name) '\(text)'") }
                range = value...(pieces.count == 2 ? bounds.upperBound : value)
            }
            guard bounds.contains(range.lowerBound), bounds.contains(range.upperBound) else {
                throw ConfigValueError("\(name) '\(text)' is outside \(bounds.lowerBound)–\(bounds.upperBound)")
            }
            values.formUnion(stride(from: range.lowerBound, through: range.upperBound, by: step))
        }
        return values
    }

    /// Whether the minute starting at `epochSeconds` (UTC) matches.
    public func matches(epochSeconds: Int64) -> Bool {
        let parts = CivilTime(epochSeconds: epochSeconds)
        guard minutes.contains(parts.minute), hours.contains(parts.hour), months.contains(parts.month) else {
            return false
        }
        let dayMatch = days.contains(parts.day)
        let weekdayMatch = weekdays.contains(parts.weekday)
        switch (daysRestricted, weekdaysRestricted) {
        case (true, true): return dayMatch || weekdayMatch
        case (true, false): return dayMatch
        case (false, true): return weekdayMatch
        case (false, false): return true
        }
    }

    /// The first matching minute strictly after `epochSeconds`, searching up to about five years.
    public func next(after epochSeconds: Int64) -> Int64? {
        var candidate = (epochSeconds / 60 + 1) * 60
        let limit = candidate + 5 * 366 * 86_400
        while candidate < limit {
            if matches(epochSeconds: candidate) { return candidate }
            candidate += 60
        }
        return nil
    }
}

/// UTC calendar fields of an epoch time (days-from-civil, Howard Hinnant's algorithm).
struct CivilTime {
    var year: Int, month: Int, day: Int, hour: Int, minute: Int, weekday: Int

    init(epochSeconds: Int64) {
        let days = Int(epochSeconds >= 0 ? epochSeconds / 86_400 : (epochSeconds - 86_399) / 86_400)
        let seconds = Int(epochSeconds - Int64(days) * 86_400)
        hour = seconds / 3600
        minute = seconds % 3600 / 60
        weekday = ((days % 7) + 11) % 7  // 1970-01-01 was a Thursday (4)
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        day = doy - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    }
}
