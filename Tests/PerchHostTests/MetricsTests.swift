import Foundation
import PerchTestSupport
import Testing

@testable import PerchHost

/// `GET /metrics` as Prometheus reads it: every family once with its help and type, histograms
/// whole (buckets in increasing `le` up to `+Inf`, which equals `_count`), label values escaped;
/// and Prometheus' own linter (`promtool check metrics`) has nothing to say.
@Suite struct MetricsTests {
    /// The scrape after some traffic: sends, a refusal, a read, an open event stream.
    static func scrape() async throws -> String {
        var text = ""
        try await withHTTPChat { http in
            for index in 0..<5 {
                let sent = try await http.call(
                    "POST", "/v3/messages", as: .user("alice"),
                    json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "hello \#(index)"}}"#)
                #expect(sent.status == 200)
            }
            #expect(try await http.call("GET", "/v3/messages/999999", as: .user("alice")).status == 404)
            #expect(try await http.call("GET", "/v3/groups/room/messages", as: .user("bob")).status == 200)
            text = String(decoding: try await http.call("GET", "/metrics", as: .nobody).body, as: UTF8.self)
        }
        return text
    }

    @Test func promtoolFindsNothingToSayAboutAScrape() async throws {
        let text = try await Self.scrape()
        let linted = try await run("/usr/bin/promtool", ["check", "metrics"], input: text)
        let said = linted.output
        #expect(linted.status == 0, "\(said)\n\(text)")
        #expect(said.isEmpty, "\(said)")
    }

    @Test func familiesAreDescribedOnceAndHistogramsAreWhole() async throws {
        let lines = try await Self.scrape().split(separator: "\n").map(String.init)
        let types = lines.filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
        #expect(types.count == Set(types).count, "a family described twice: \(types)")
        #expect(lines.filter { $0.hasPrefix("# HELP ") }.count == types.count)
        #expect(lines.contains("# TYPE perch_http_request_duration_seconds histogram"))
        #expect(lines.contains("perch_build_info{version=\"\(PerchVersion.current)\"} 1.0"))
        let database = try #require(lines.first { $0.hasPrefix("perch_database_bytes{file=\"database\"} ") })
        #expect((Double(database.split(separator: " ")[1]) ?? 0) > 0)
        #expect(lines.contains("perch_bots 0.0"))

        // The sends' histogram: its buckets in order, never fewer than the one before, the last
        // +Inf with every request, then the sum and the count.
        let send = lines.filter { $0.contains("perch_http_request_duration_seconds") && $0.contains("messages.send") }
        let buckets = send.filter { $0.contains("_bucket") }
        #expect(
            buckets.map { $0.split(separator: "\"")[1] } == ["0.001", "0.005", "0.025", "0.1", "0.5", "2.5", "+Inf"])
        let counts = buckets.compactMap { Double($0.split(separator: " ")[1]) }
        #expect(zip(counts, counts.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(counts.last == 5)
        #expect(send.suffix(2).map { $0.contains("_sum{") || $0.contains("_count{") } == [true, true])
        #expect(send.last == "perch_http_request_duration_seconds_count{route=\"messages.send\"} 5.0")
    }

    @Test func labelValuesAreEscaped() {
        let metrics = HostMetrics()
        metrics.increment("perch_actions_total", ["bot": "say \"hi\"\\\nnow", "action": "send"])
        #expect(
            metrics.prometheusText.split(separator: "\n").last
                == #"perch_actions_total{action="send",bot="say \"hi\"\\\nnow"} 1.0"#)
        // A series of a family not described still renders, without help or type.
        metrics.increment("perch_test_only")
        #expect(metrics.prometheusText.hasSuffix("perch_test_only 1.0"))
    }

    /// contrib/prometheus/perch-alerts.yml: Prometheus reads it, its own tests pass (each alert fires
    /// on the series that should fire it, with its summary, and not before), and every Perch metric
    /// it names is one the host exposes.
    @Test func theAlertingRulesLoadPassTheirTestsAndNameRealMetrics() async throws {
        let directory = repositoryRoot + "/contrib/prometheus"
        for arguments in [["check", "rules", "perch-alerts.yml"], ["test", "rules", "perch-alerts.test.yml"]] {
            let promtool = try await run("/usr/bin/promtool", arguments, directory: directory)
            let said = promtool.output
            #expect(promtool.status == 0, "\(arguments): \(said)")
            #expect(said.contains("SUCCESS"), "\(said)")
        }
        let rules = try String(contentsOfFile: directory + "/perch-alerts.yml", encoding: .utf8)
        let named = Set(rules.matches(of: /perch_[a-z_]+/).map { String($0.output) })
        #expect(!named.isEmpty)
        for name in named {
            let family = ["_bucket", "_sum", "_count"].reduce(name) { name, suffix in
                name.hasSuffix(suffix) && HostMetrics.families[String(name.dropLast(suffix.count))] != nil
                    ? String(name.dropLast(suffix.count)) : name
            }
            #expect(HostMetrics.families[family] != nil, "the rules name \(name), which Perch does not expose")
        }
    }
}
