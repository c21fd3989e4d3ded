// libFuzzer harness for the config parser: ConfigFile.parse on any text.
import TouchGateConfig
import TouchGatePolicy

private func violated(_ what: String, _ text: String) -> Never {
    fatalError("config harness: \(what) (input \(text.utf8.count) bytes)")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    // The daemon parses only valid UTF-8 (ConfigFile.load refuses the rest, naming the line);
    // other bytes become text with replacement characters, which parse must take like any text.
    let text = String(validating: bytes, as: UTF8.self) ?? String(decoding: bytes, as: UTF8.self)
    let lineCount = text.utf8.count(where: { $0 == 0x0A }) + 1
    do {
        let config = try ConfigFile.parse(text)
        // What parses is what the daemon starts with: the policy's own validator must accept it.
        if let problem = config.policy.problems.first { violated("accepted a config the policy refuses: \(problem)", text) }
        // The service becomes a file name under /etc/pam.d: never a path, never empty.
        let service = config.passwordService
        if service.isEmpty || service.contains("/") || service == "." || service == ".." {
            violated("accepted password_service '\(service)'", text)
        }
    } catch {
        // A refusal names a line of the input and says why, so the admin can find it.
        guard (1...lineCount).contains(error.line) else { violated("error on line \(error.line) of \(lineCount)", text) }
        guard !error.message.isEmpty else { violated("error without a message", text) }
    }
    return 0
}
