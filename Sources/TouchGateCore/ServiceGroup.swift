// The daemon's long-running parts as services in one order: started one after another, stopped in
// the reverse order on shutdown, each stop awaited (swift-service-lifecycle's ServiceGroup, on the
// core loop instead of Swift's concurrent executor).
import Logging

/// What a service's start came to.
public enum ServiceStart: Sendable, Equatable {
    case running
    /// Not available here (no system bus, no logind…): the daemon goes on without it.
    case unavailable(String)
    /// Could not start; for a required service the daemon does not start either.
    case failed(String)
}

/// One long-running part of the daemon: the core (state and reader), the socket listener, the sleep
/// watcher, the D-Bus front-end.
@CoreActor public protocol DaemonService: AnyObject {
    var serviceName: String { get }
    func start() async -> ServiceStart
    /// Ends what the service runs; called only after a start that returned `.running`.
    func shutdown() async
}

@CoreActor public final class ServiceGroup {
    private struct Entry {
        let service: any DaemonService
        let required: Bool
    }

    private var entries: [Entry] = []
    private var running: [any DaemonService] = []
    private var stopping = false
    private let log: Logger

    public init(log: Logger) { self.log = log }

    /// Adds a service after those already added; a required one that fails stops the start.
    public func add(_ service: any DaemonService, required: Bool) {
        entries.append(Entry(service: service, required: required))
    }

    /// The services that started, in the order they did.
    public var runningServices: [String] { running.map(\.serviceName) }

    /// Starts every service not yet started, in order (a later call starts those added since). A
    /// required service that fails stops the ones already running (in reverse) and its reason is
    /// returned; an optional one that cannot run is said in the log and left out. A service whose
    /// start ends after shutdown began is stopped at once.
    public func start() async -> String? {
        while !stopping, !entries.isEmpty {
            let entry = entries.removeFirst()
            let started = await entry.service.start()
            if stopping {
                if started == .running { await entry.service.shutdown() }
                return nil
            }
            switch started {
            case .running:
                running.append(entry.service)
            case .unavailable(let why) where !entry.required, .failed(let why) where !entry.required:
                log.info("\(entry.service.serviceName) not running: \(why)")
            case .unavailable(let why), .failed(let why):
                entries = []
                await shutdown()
                return "\(entry.service.serviceName): \(why)"
            }
        }
        return nil
    }

    /// Stops the running services, last started first, each awaited before the next.
    public func shutdown() async {
        stopping = true
        entries = []
        while let service = running.popLast() {
            await service.shutdown()
            log.info("stopped: \(service.serviceName)")
        }
    }
}
