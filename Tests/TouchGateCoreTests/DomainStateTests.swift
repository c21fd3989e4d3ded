// Domain state (docs/spec.md §4): an HMAC keyed by the installation's secret over the service and the set of prints.
import Crypto
import Glibc
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("DomainStateKey")
struct DomainStateTests {
    let rightIndex = EnrolledPrint(finger: .rightIndex, digest: sha256Hex([1]))
    let leftThumb = EnrolledPrint(finger: .leftThumb, digest: sha256Hex([2]))
    let rightThumb = EnrolledPrint(finger: .rightThumb, digest: sha256Hex([3]))

    @Test func createsAThirtyTwoByteOwnerOnlySecretOnFirstUse() async throws {
        try await withTemporaryDirectory { dir in
            let key = try DomainStateKey(stateDirectory: try Directory.openRoot(dir))
            #expect(key.key.count == 32)
            #expect(permissions("\(dir)/secret") == 0o600)
            #expect(contents("\(dir)/secret") == key.key)
            #expect(key.key != [UInt8](repeating: 0, count: 32))
        }
    }

    @Test func reusesTheSecretOnTheSecondStart() async throws {
        try await withTemporaryDirectory { dir in
            let first = try DomainStateKey(stateDirectory: try Directory.openRoot(dir))
            let second = try DomainStateKey(stateDirectory: try Directory.openRoot(dir))
            #expect(second.key == first.key)
            #expect(
                second.domainState(service: "sudo", prints: [rightIndex])
                    == first.domainState(service: "sudo", prints: [rightIndex]))
        }
    }

    @Test func refusesASecretShorterThanThirtyTwoBytes() async throws {
        try await withTemporaryDirectory { dir in
            try plantFile("\(dir)/secret", [UInt8](repeating: 7, count: 31))
            #expect(throws: StorageError.unsafe("\(dir)/secret is shorter than 32 bytes")) {
                try DomainStateKey(stateDirectory: try Directory.openRoot(dir))
            }
            // Refused, not replaced: the short file is still there as it was.
            #expect(contents("\(dir)/secret") == [UInt8](repeating: 7, count: 31))
        }
    }

    @Test func refusesASecretThatIsASymlink() async throws {
        try await withTemporaryDirectory { dir in
            try plantFile("\(dir)/other", [UInt8](repeating: 1, count: 32))
            try plantSymlink(at: "\(dir)/secret", to: "\(dir)/other")
            #expect(throws: StorageError.unsafe("\(dir)/secret is a symbolic link")) {
                try DomainStateKey(stateDirectory: try Directory.openRoot(dir))
            }
        }
    }

    @Test func isAnHMACSHA256OfTheServiceAndTheSortedPrintsKeyedByTheSecret() async throws {
        try await withTemporaryDirectory { dir in
            let secret = (0..<32).map { UInt8($0) }
            try plantFile("\(dir)/secret", secret)
            let key = try DomainStateKey(stateDirectory: try Directory.openRoot(dir))
            var message = Array("touchgate-domain-state-v1\0sudo\0".utf8)
            message += Array("left-thumb:\(leftThumb.digest)\nright-index-finger:\(rightIndex.digest)".utf8)
            let expected = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret))
                .map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()

            #expect(key.key == secret)
            #expect(key.domainState(service: "sudo", prints: [rightIndex, leftThumb]) == expected)
        }
    }

    @Test func isSixtyFourLowercaseHexCharacters() async throws {
        try await withTemporaryDirectory { dir in
            let value = try #require(
                try DomainStateKey(stateDirectory: try Directory.openRoot(dir)).domainState(
                    service: "login", prints: [rightIndex]))
            #expect(value.count == 64)
            #expect(value.allSatisfy { "0123456789abcdef".contains($0) })
        }
    }

    @Test func isTheSameForTheSamePrintsInAnyOrder() async throws {
        try await withTemporaryDirectory { dir in
            let key = try DomainStateKey(stateDirectory: try Directory.openRoot(dir))
            let a = key.domainState(service: "sudo", prints: [leftThumb, rightThumb, rightIndex])
            let b = key.domainState(service: "sudo", prints: [rightIndex, leftThumb, rightThumb])
            #expect(a != nil)
            #expect(a == b)
        }
    }

    @Test func differsBetweenServices() async throws {
        try await withTemporaryDirectory { dir in
            let key = try DomainStateKey(stateDirectory: try Directory.openRoot(dir))
            #expect(
                key.domainState(service: "sudo", prints: [rightIndex])
                    != key.domainState(service: "login", prints: [rightIndex]))
            #expect(
                key.domainState(service: "", prints: [rightIndex])
                    != key.domainState(service: "sudo", prints: [rightIndex]))
        }
    }

    @Test func differsBetweenInstallations() async throws {
        try await withTemporaryDirectory { one in
            try await withTemporaryDirectory { two in
                let a = try DomainStateKey(stateDirectory: try Directory.openRoot(one))
                let b = try DomainStateKey(stateDirectory: try Directory.openRoot(two))
                #expect(a.key != b.key)
                #expect(
                    a.domainState(service: "sudo", prints: [rightIndex])
                        != b.domainState(service: "sudo", prints: [rightIndex]))
            }
        }
    }

    @Test func isAbsentWithoutPrints() async throws {
        try await withTemporaryDirectory { dir in
            let key = try DomainStateKey(stateDirectory: try Directory.openRoot(dir))
            #expect(key.domainState(service: "sudo", prints: []) == nil)
        }
    }

    @Test func changesWhenAPrintIsAddedOrReplacedAndReturnsAfterAddThenDelete() async throws {
        try await withTemporaryDirectory { dir in
            let reader = StubReader()
            let store = PrintFiles(root: try Directory.openRoot("\(dir)/prints"), reader: reader)
            let device = DeviceKey(driver: "stub", deviceID: "stub-0")
            let key = try DomainStateKey(stateDirectory: try Directory.openRoot(dir))
            func current() -> String? {
                key.domainState(service: "sudo", prints: store.list("alice", device: device).prints)
            }
            func save(_ finger: Finger, _ payload: String) throws {
                try store.save(
                    reader.print(user: "alice", finger: finger.fpFinger, payload: payload),
                    user: "alice", device: device, finger: finger)
            }

            #expect(current() == nil)
            try save(.rightIndex, "1")
            let original = try #require(current())

            try save(.leftThumb, "2")
            let withSecondFinger = try #require(current())
            #expect(withSecondFinger != original)

            _ = try store.delete("alice", device: device, fingers: [.leftThumb]).removed
            #expect(current() == original)

            try save(.rightIndex, "9")
            let replaced = try #require(current())
            #expect(replaced != original)
            #expect(replaced != withSecondFinger)

            _ = try store.delete("alice", device: device, fingers: [.rightIndex]).removed
            #expect(current() == nil)
        }
    }

    @Test func aPrintMovedToAnotherFingerIsADifferentSet() async throws {
        try await withTemporaryDirectory { dir in
            let key = try DomainStateKey(stateDirectory: try Directory.openRoot(dir))
            let moved = EnrolledPrint(finger: .leftIndex, digest: rightIndex.digest)
            #expect(
                key.domainState(service: "sudo", prints: [rightIndex])
                    != key.domainState(service: "sudo", prints: [moved]))
        }
    }
}
