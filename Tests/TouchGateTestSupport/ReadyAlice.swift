// A user nothing refuses: what the socket and D-Bus front-ends' tests start from.
@testable import TouchGateCore
import TouchGateReader

extension TestBed {
    /// Alice enrolled on the stub reader (right index), opted in, and with her password typed this
    /// boot: nothing refuses her finger.
    public func readyAlice(_ core: Core) async throws {
        let info = StubReader.defaultInfo
        try await core.prints.save(
            reader.print(user: "alice", finger: 7), user: "alice",
            device: DeviceKey(driver: info.driver, deviceID: info.deviceID), finger: .rightIndex)
        let ctx = EventContext(user: "alice", origin: Origin(), policy: nil, byUID: 0)
        try await core.adminChange(ctx, action: "enable") { core.policyEngine.enable($0) }
        try await core.recordPasswordSuccess(ctx)
    }
}
