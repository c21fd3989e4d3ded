// What the daemon does to its stores once at start: stale temporary files removed, and prints of
// the older layout (<state>/users/<user>/<finger>.print) moved into fprintd's layout without loss.
import TouchGateReader
import TouchGateWire

public enum StartUp {
    /// Deletes what interrupted writes left in the state directory and the print store; returns how many.
    @discardableResult
    public static func removeStaleTemporaries(state: Directory, printStore: Directory) -> Int {
        var removed = state.removeStaleTemporaries() + printStore.removeStaleTemporaries()
        if let users = try? state.subdirectory("users") {
            removed += users.removeStaleTemporaries()
            for user in users.entries() { removed += (try? users.subdirectory(user))??.removeStaleTemporaries() ?? 0 }
        }
        for user in printStore.entries() {
            guard let userDir = (try? printStore.subdirectory(user)) ?? nil else { continue }
            removed += userDir.removeStaleTemporaries()
            for driver in userDir.entries() {
                guard let driverDir = (try? userDir.subdirectory(driver)) ?? nil else { continue }
                for device in driverDir.entries() {
                    removed += (try? driverDir.subdirectory(device))??.removeStaleTemporaries() ?? 0
                }
            }
        }
        return removed
    }

    /// Moves every `<finger>.print` of the older layout to `<store>/<user>/<driver>/<device>/<n>`,
    /// reading the driver and device from the print itself. A print that cannot be read, or whose
    /// place is taken by a different print, stays where it is (and is logged): nothing is lost.
    public static func migrateLegacyPrints(state: Directory, files: PrintFiles, log: (String) -> Void) {
        guard let users = (try? state.subdirectory("users")) ?? nil else { return }
        for user in users.entries() where isValidAccountName(user) {
            guard let dir = (try? users.subdirectory(user)) ?? nil else { continue }
            for name in dir.entries() where name.hasSuffix(".print") {
                guard let finger = Finger(rawValue: String(name.dropLast(6))) else { continue }
                do {
                    guard let bytes = try dir.read(name) else { continue }
                    guard let d = files.reader.describe(bytes), !d.driver.isEmpty, !d.deviceID.isEmpty else {
                        log("\(dir.path)/\(name): libfprint cannot read this print; left in place")
                        continue
                    }
                    let device = DeviceKey(driver: d.driver, deviceID: d.deviceID)
                    if let existing = try files.template(user, device: device, finger: finger), existing != bytes {
                        log(
                            "\(dir.path)/\(name): \(user)'s \(finger.rawValue) in the print store differs; left in place"
                        )
                        continue
                    }
                    try files.save(bytes, user: user, device: device, finger: finger)
                    try dir.remove(name)  // on disk once it returns
                    log("moved \(user)'s \(finger.rawValue) to the print store")
                } catch {
                    log("\(dir.path)/\(name): cannot move it to the print store: \(error)")
                }
            }
        }
    }
}
