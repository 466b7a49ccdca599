import PerchTestSupport
import Testing

@testable import PerchHTTP

/// The hashes the API keeps of tokens and compares keys by: SHA-256 through the provider's
/// algorithm fetched once, on many threads at once.
@Suite struct SecretsTests {
    @Test func digestsAreSHA256() {
        // FIPS 180-2's test vectors, and the empty message.
        #expect(Secrets.hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Secrets.hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            Secrets.hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func matchesOnlyTheSameText() {
        let key = Secrets.newToken()
        let digest = Secrets.digest(key)
        #expect(Secrets.matches(key, digest: digest))
        #expect(!Secrets.matches(key + "x", digest: digest))
        #expect(!Secrets.matches(String(key.dropLast()), digest: digest))
        #expect(!Secrets.matches(key, digest: Array(digest.dropLast())))
    }

    @Test func digestsAgreeAcrossThreads() async {
        let texts = (0..<64).map { "token-\($0)" }
        let alone = texts.map(Secrets.hash)
        let together = await withTaskGroup(of: (Int, String).self) { group in
            for (index, text) in texts.enumerated() { group.addTask { (index, Secrets.hash(text)) } }
            var hashes = [String](repeating: "", count: texts.count)
            for await (index, hash) in group { hashes[index] = hash }
            return hashes
        }
        #expect(together == alone)
    }
}
