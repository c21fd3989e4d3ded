// A machine with several scripted readers: what LibfprintReaders is to libfprint's list.
import TouchGateReader

/// Serves its readers in order (the first is the default), each while it has a description; it
/// announces no change (the protocol's default onChange).
public final class StubReaderSet: FingerprintReaders, Sendable {
    public let readers: [StubReader]

    public init(_ readers: StubReader...) { self.readers = readers }

    public var served: [any FingerprintReader] { readers.filter { $0.info != nil } }

    public func whenOpened(_ completion: @escaping @Sendable () -> Void) { completion() }

    public func describe(_ template: [UInt8]) -> PrintDescription? { readers.first?.describe(template) }

    public func close(completion: @escaping @Sendable () -> Void) {
        for r in readers { r.close {} }
        completion()
    }

    public func reopen(completion: @escaping @Sendable (Bool) -> Void) {
        for r in readers { r.reopen { _ in } }
        completion(!served.isEmpty)
    }
}
