import PerchTestSupport
import Testing

@testable import PerchHost

/// The rate limits' buckets: a bucket refills at its rate up to its burst, and a bot keeps a bucket
/// per conversation only while it matters (a full one is the same as a new one).
@Suite struct TokenBucketTests {
    @Test func aBucketGivesItsBurstThenRefillsAtItsRate() {
        let bucket = TokenBucket(perMinute: 60, burst: 2)
        #expect(bucket.take(at: 0) && bucket.take(at: 0))
        #expect(!bucket.take(at: 0.5))
        #expect(!bucket.isFull(at: 0.5))
        #expect(bucket.take(at: 1.5))
        #expect(bucket.isFull(at: 10))
    }

    @Test func aBotInThousandsOfConversationsKeepsOnlyTheBucketsThatMatter() {
        let buckets = ConversationBuckets(perMinute: 60, burst: 3)
        // A reply in 10,000 one-on-one conversations, one a second: each bucket refills within
        // three seconds, so the full ones are dropped once 4,096 are held.
        for index in 0..<10_000 { _ = buckets.bucket(for: "c\(index)", at: Double(index)).take(at: Double(index)) }
        #expect(buckets.count <= ConversationBuckets.kept)
        // A conversation being limited now keeps its state through the pruning.
        let busy = buckets.bucket(for: "busy", at: 20_000)
        #expect(busy.take(at: 20_000) && busy.take(at: 20_000) && busy.take(at: 20_000))
        for index in 0..<5_000 { _ = buckets.bucket(for: "d\(index)", at: 20_000) }
        #expect(!buckets.bucket(for: "busy", at: 20_000).take(at: 20_000))
    }
}
