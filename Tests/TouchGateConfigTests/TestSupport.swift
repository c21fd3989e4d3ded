// Files for the config tests: the shipped debian/touchgate.conf and temporary files.

#if canImport(Glibc)
import Glibc
#endif

struct TestFileError: Error {}

/// `debian/touchgate.conf` of this checkout, found from this source file's path.
func shippedConfigPath(_ file: String = #filePath) -> String {
    // …/Tests/TouchGateConfigTests/TestSupport.swift → …/debian/touchgate.conf
    var parts = file.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)
    return parts.joined(separator: "/") + "/debian/touchgate.conf"
}

func readText(_ path: String) throws -> String? {
    guard let f = fopen(path, "r") else { throw TestFileError() }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&buffer, 1, buffer.count, f)
        if n == 0 { break }
        bytes.append(contentsOf: buffer[0..<n])
    }
    return String(validating: bytes, as: UTF8.self)
}

/// A new file with `bytes` in it, mode 0600; remove it with `removeFile`.
func temporaryFile(_ bytes: [UInt8]) throws -> String {
    var template = Array("/tmp/touchgate-config-test-XXXXXX".utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard fd >= 0 else { throw TestFileError() }
    defer { close(fd) }
    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    guard written == bytes.count else { throw TestFileError() }
    return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

func removeFile(_ path: String) { unlink(path) }
