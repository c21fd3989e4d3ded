// Every sentence a person sees from the daemon, in English and Simplified Chinese (SPEC §8).
import TouchGateReader
import TouchGateWire

public enum Language: Sendable, Equatable {
    case english, chinese

    /// From the PAM client's LC_ALL / LC_MESSAGES / LANG value: zh_* → Chinese.
    public init(locale: String?) {
        self = (locale ?? "").lowercased().hasPrefix("zh") ? .chinese : .english
    }
}

public enum Text: Sendable, Equatable {
    case placeFinger(swipe: Bool)
    case enrollPrompt(finger: Finger, stages: Int)
    case retry(RetryHint)
    case noMatch(triesLeft: Int)
    case notRecognised(tries: Int)
    case queued(ahead: Int)
    case recognised
    case enrolled(Finger)
    case enrollStage(Int, Int)
    case noReader
    case readerRemoved
    case readerTooHot
    case readerBusy
    case timedOut(seconds: Int)
    case remoteSession
    case notEnrolled
    case notPermitted
    case userUnknown(String)
    case fingerNotEnrolled(Finger)
    case deleted(Int)
    case internalError
    case badRequest
    case cancelled
    case shuttingDown

    public func render(_ language: Language) -> String {
        switch language {
        case .english: return english
        case .chinese: return chinese
        }
    }

    private var english: String {
        switch self {
        case .placeFinger(let swipe):
            return swipe ? "Swipe your finger across the fingerprint reader" : "Place your finger on the fingerprint reader"
        case .enrollPrompt(let f, let n): return "Enrolling \(f.rawValue): scan your finger \(n) times"
        case .retry(let hint):
            switch hint {
            case .general: return "The scan did not work, try again"
            case .tooShort: return "Swipe was too short, try again"
            case .centerFinger: return "Centre your finger on the reader and try again"
            case .removeFinger: return "Remove your finger and try again"
            }
        case .noMatch(let left): return "Fingerprint not recognised, try again (\(left) \(left == 1 ? "try" : "tries") left)"
        case .notRecognised(let n): return "Fingerprint not recognised after \(n) \(n == 1 ? "try" : "tries"): use your password"
        case .queued(let ahead): return "Waiting for the fingerprint reader (\(ahead) ahead in the queue)"
        case .recognised: return "Fingerprint recognised"
        case .enrolled(let f): return "Enrolled \(f.rawValue)"
        case .enrollStage(let k, let n): return "Scan \(k) of \(n) recorded"
        case .noReader: return "No fingerprint reader available: use your password"
        case .readerRemoved: return "The fingerprint reader was removed: use your password"
        case .readerTooHot: return "The fingerprint reader is too hot: use your password"
        case .readerBusy: return "The fingerprint reader is busy: use your password"
        case .timedOut(let s): return "No finger detected in \(s) seconds: use your password"
        case .remoteSession: return "Fingerprint is not offered in remote sessions"
        case .notEnrolled: return "No fingerprints enrolled"
        case .notPermitted: return "Not permitted"
        case .userUnknown(let u): return "No such user: \(u)"
        case .fingerNotEnrolled(let f): return "\(f.rawValue) is not enrolled"
        case .deleted(let n): return "Deleted \(n) \(n == 1 ? "fingerprint" : "fingerprints")"
        case .internalError: return "The fingerprint service had an internal error: use your password"
        case .badRequest: return "Malformed request"
        case .cancelled: return "Cancelled"
        case .shuttingDown: return "The fingerprint service is stopping: use your password"
        }
    }

    private var chinese: String {
        switch self {
        case .placeFinger(let swipe): return swipe ? "请在指纹识别器上滑动手指" : "请将手指放在指纹识别器上"
        case .enrollPrompt(let f, let n): return "正在录入 \(f.rawValue)：请扫描手指 \(n) 次"
        case .retry(let hint):
            switch hint {
            case .general: return "扫描失败，请重试"
            case .tooShort: return "滑动太短，请重试"
            case .centerFinger: return "请将手指置于识别器中央后重试"
            case .removeFinger: return "请移开手指后重试"
            }
        case .noMatch(let left): return "指纹不匹配，请重试（还剩 \(left) 次）"
        case .notRecognised(let n): return "指纹 \(n) 次均未匹配：请使用密码"
        case .queued(let ahead): return "正在等待指纹识别器（前面还有 \(ahead) 个请求）"
        case .recognised: return "指纹已识别"
        case .enrolled(let f): return "已录入 \(f.rawValue)"
        case .enrollStage(let k, let n): return "已记录第 \(k)/\(n) 次扫描"
        case .noReader: return "没有可用的指纹识别器：请使用密码"
        case .readerRemoved: return "指纹识别器已被移除：请使用密码"
        case .readerTooHot: return "指纹识别器过热：请使用密码"
        case .readerBusy: return "指纹识别器正忙：请使用密码"
        case .timedOut(let s): return "\(s) 秒内未检测到手指：请使用密码"
        case .remoteSession: return "远程会话不提供指纹验证"
        case .notEnrolled: return "未录入指纹"
        case .notPermitted: return "无权执行此操作"
        case .userUnknown(let u): return "用户不存在：\(u)"
        case .fingerNotEnrolled(let f): return "\(f.rawValue) 未录入"
        case .deleted(let n): return "已删除 \(n) 个指纹"
        case .internalError: return "指纹服务内部错误：请使用密码"
        case .badRequest: return "请求格式错误"
        case .cancelled: return "已取消"
        case .shuttingDown: return "指纹服务正在停止：请使用密码"
        }
    }
}
