// Domain state (SPEC §4): an HMAC keyed by the installation's secret over the service and the set of prints.
import Crypto
import Glibc
import Testing
@testable import TouchGateDaemon
import TouchGateWire

@Suite("DomainStateKey")
struct DomainStateTests {
    let rightIndex = EnrolledPrint(finger: .rightIndex, digest: sha256Hex([1]))
    let leftThumb = EnrolledPrint(finger: .leftThumb, digest: sha256Hex([2]))
    let rightThumb = EnrolledPrint(finger: .rightThumb, digest: sha256Hex([3]))

    @Test func createsAThirtyTwoByteOwnerOnlySecretOnFirstUse() throws {
        try withTemporaryDirectory { dir in
            let key = try DomainStateKey(stateDirectory: dir)
            #expect(key.key.count == 32)
            #expect(permissions("\(dir)/secret") == 0o600)
            #expect(contents("\(dir)/secret") == key.key)
            #expect(key.key != [UInt8](repeating: 0, count: 32))
        }
    }

    @Test func reusesTheSecretOnTheSecondStart() throws {
        try withTemporaryDirectory { dir in
            let first = try DomainStateKey(stateDirectory: dir)
            let second = try DomainStateKey(stateDirectory: dir)
            #expect(second.key == first.key)
            #expect(second.domainState(service: "sudo", prints: [rightIndex])
                    == first.domainState(service: "sudo", prints: [rightIndex]))
        }
    }

    @Test func refusesASecretShorterThanThirtyTwoBytes() throws {
        try withTemporaryDirectory { dir in
            try plantFile("\(dir)/secret", [UInt8](repeating: 7, count: 31))
            #expect(throws: StorageError.unsafe("\(dir)/secret is shorter than 32 bytes")) {
                try DomainStateKey(stateDirectory: dir)
            }
            // Refused, not replaced: the short file is still there as it was.
            #expect(contents("\(dir)/secret") == [UInt8](repeating: 7, count: 31))
        }
    }

    @Test func refusesASecretThatIsASymlink() throws {
        try withTemporaryDirectory { dir in
            try plantFile("\(dir)/other", [UInt8](repeating: 1, count: 32))
            try plantSymlink(at: "\(dir)/secret", to: "\(dir)/other")
            #expect(throws: StorageError.io("open \(dir)/secret", ELOOP)) {
                try DomainStateKey(stateDirectory: dir)
            }
        }
    }

    @Test func isAnHMACSHA256OfTheServiceAndTheSortedPrintsKeyedByTheSecret() throws {
        try withTemporaryDirectory { dir in
            let secret = (0..<32).map { UInt8($0) }
            try plantFile("\(dir)/secret", secret)
            let key = try DomainStateKey(stateDirectory: dir)
            var message = Array("touchgate-domain-state-v1\0sudo\0".utf8)
            message += Array("left-thumb:\(leftThumb.digest)\nright-index-finger:\(rightIndex.digest)".utf8)
            let expected = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret))
                .map { String(format: "%02x", $0) }.joined()

            #expect(key.key == secret)
            #expect(key.domainState(service: "sudo", prints: [rightIndex, leftThumb]) == expected)
        }
    }

    @Test func isSixtyFourLowercaseHexCharacters() throws {
        try withTemporaryDirectory { dir in
            let value = try #require(try DomainStateKey(stateDirectory: dir).domainState(service: "login", prints: [rightIndex]))
            #expect(value.count == 64)
            #expect(value.allSatisfy { "0123456789abcdef".contains($0) })
        }
    }

    @Test func isTheSameForTheSamePrintsInAnyOrder() throws {
        try withTemporaryDirectory { dir in
            let key = try DomainStateKey(stateDirectory: dir)
            let a = key.domainState(service: "sudo", prints: [leftThumb, rightThumb, rightIndex])
            let b = key.domainState(service: "sudo", prints: [rightIndex, leftThumb, rightThumb])
            #expect(a != nil)
            #expect(a == b)
        }
    }

    @Test func differsBetweenServices() throws {
        try withTemporaryDirectory { dir in
            let key = try DomainStateKey(stateDirectory: dir)
            #expect(key.domainState(service: "sudo", prints: [rightIndex])
                    != key.domainState(service: "login", prints: [rightIndex]))
            #expect(key.domainState(service: "", prints: [rightIndex])
                    != key.domainState(service: "sudo", prints: [rightIndex]))
        }
    }

    @Test func differsBetweenInstallations() throws {
        try withTemporaryDirectory { one in
            try withTemporaryDirectory { two in
                let a = try DomainStateKey(stateDirectory: one)
                let b = try DomainStateKey(stateDirectory: two)
                #expect(a.key != b.key)
                #expect(a.domainState(service: "sudo", prints: [rightIndex])
                        != b.domainState(service: "sudo", prints: [rightIndex]))
            }
        }
    }

    @Test func isAbsentWithoutPrints() throws {
        try withTemporaryDirectory { dir in
            let key = try DomainStateKey(stateDirectory: dir)
            #expect(key.domainState(service: "sudo", prints: []) == nil)
        }
    }

    @Test func changesWhenAPrintIsAddedOrReplacedAndReturnsAfterAddThenDelete() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            let key = try DomainStateKey(stateDirectory: dir)
            func current() -> String? { key.domainState(service: "sudo", prints: store.prints(of: "alice")) }

            #expect(current() == nil)
            try store.save([1], user: "alice", finger: .rightIndex)
            let original = try #require(current())

            try store.save([2], user: "alice", finger: .leftThumb)
            let withSecondFinger = try #require(current())
            #expect(withSecondFinger != original)

            try store.delete(user: "alice", fingers: [.leftThumb])
            #expect(current() == original)

            try store.save([9], user: "alice", finger: .rightIndex)
            let replaced = try #require(current())
            #expect(replaced != original)
            #expect(replaced != withSecondFinger)

            try store.delete(user: "alice", fingers: [.rightIndex])
            #expect(current() == nil)
        }
    }

    @Test func aPrintMovedToAnotherFingerIsADifferentSet() throws {
        try withTemporaryDirectory { dir in
            let key = try DomainStateKey(stateDirectory: dir)
            let moved = EnrolledPrint(finger: .leftIndex, digest: rightIndex.digest)
            #expect(key.domainState(service: "sudo", prints: [rightIndex])
                    != key.domainState(service: "sudo", prints: [moved]))
        }
    }
}
