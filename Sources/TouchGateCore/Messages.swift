// Every sentence a person sees from the daemon, in English and Simplified Chinese (SPEC §8).
import TouchGatePolicy
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
    case suspending
    case stateUnreadable
    case printsUnsafe
    case busy
    case templateDamaged(Finger)
    case templatesDamaged([Finger])
    case notEnabled
    case lockout(attempts: Int)
    case passwordRequired(PasswordRequiredReason)
    case backoff(seconds: Int)
    case wrongPassword
    case wrongPasswordBackoff(seconds: Int)
    case passwordNotSet
    case passwordNeeded
    case passwordAccepted
    case done(String)
    /// Several sentences, one per line.
    indirect case lines([Text])

    public func render(_ language: Language) -> String {
        if case .lines(let texts) = self { return texts.map { $0.render(language) }.joined(separator: "\n") }
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
        case .shuttingDown: return "Fingerprint service stopping: use your password"
        case .suspending: return "The computer is going to sleep: use your password"
        case .stateUnreadable: return "Fingerprint unavailable until you enter your password (its saved state could not be read)"
        case .notEnabled: return "Fingerprint authentication is not enabled for this account"
        case .printsUnsafe: return "Fingerprint unavailable: its stored files are not safe to use (ask the administrator)"
        case .busy: return "Fingerprint service busy: use your password"
        case .templateDamaged(let f):
            return "The enrolled \(f.rawValue) is damaged: enroll it again (touchgate enroll --finger \(f.rawValue))"
        case .templatesDamaged(let fingers):
            let names = fingers.map(\.rawValue).joined(separator: ", ")
            return "The enrolled fingerprints are damaged (\(names)): enroll them again, then use your password"
        case .lockout(let n): return "Fingerprint locked after \(n) failed attempts: enter your password"
        case .passwordRequired(let reason):
            switch reason {
            case .boot: return "Enter your password: it is required once after the computer starts"
            case .idle: return "Enter your password: fingerprint has not been used for a long time"
            case .interval: return "Enter your password: it has not been entered for several days"
            case .enrollmentChanged: return "Enter your password: the enrolled fingerprints changed"
            case .adminLock: return "Enter your password: the administrator locked fingerprint authentication"
            }
        case .backoff(let s): return "Too many wrong passwords: try again in \(Self.duration(s))"
        case .wrongPassword: return "Wrong password"
        case .wrongPasswordBackoff(let s): return "Wrong password: password entry is locked for \(Self.duration(s))"
        case .passwordNotSet: return "This account has no usable password"
        case .passwordNeeded: return "Your password is needed for this"
        case .passwordAccepted: return "Password accepted"
        case .done(let what): return what
        case .lines: return ""  // rendered in render(_:)
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
        case .suspending: return "计算机即将休眠：请使用密码"
        case .printsUnsafe: return "指纹不可用：已保存的指纹文件不安全（请联系管理员）"
        case .busy: return "指纹服务正忙：请使用密码"
        case .templateDamaged(let f): return "已录入的 \(f.rawValue) 已损坏：请重新录入（touchgate enroll --finger \(f.rawValue)）"
        case .templatesDamaged(let fingers):
            return "已录入的指纹已损坏（\(fingers.map(\.rawValue).joined(separator: "、"))）：请重新录入，现在请使用密码"
        case .stateUnreadable: return "无法读取已保存的状态：输入密码前指纹不可用"
        case .notEnabled: return "此账户未启用指纹验证"
        case .lockout(let n): return "指纹连续 \(n) 次验证失败已锁定：请输入密码"
        case .passwordRequired(let reason):
            switch reason {
            case .boot: return "请输入密码：开机后需要输入一次密码"
            case .idle: return "请输入密码：指纹已长时间未使用"
            case .interval: return "请输入密码：已有数天未输入密码"
            case .enrollmentChanged: return "请输入密码：已录入的指纹发生了变化"
            case .adminLock: return "请输入密码：管理员已锁定指纹验证"
            }
        case .backoff(let s): return "密码错误次数过多：请在 \(Self.durationZh(s)) 后重试"
        case .wrongPassword: return "密码错误"
        case .wrongPasswordBackoff(let s): return "密码错误：密码输入已锁定 \(Self.durationZh(s))"
        case .passwordNotSet: return "此账户没有可用的密码"
        case .passwordNeeded: return "此操作需要输入您的密码"
        case .passwordAccepted: return "密码正确"
        case .done(let what): return what
        case .lines: return ""  // rendered in render(_:)
        }
    }

    /// "45 seconds", "5 minutes", "1 hour": rounded up so the wait is never understated.
    static func duration(_ s: Int) -> String {
        if s < 60 { return "\(s) \(s == 1 ? "second" : "seconds")" }
        if s < 3600 { let m = (s + 59) / 60; return "\(m) \(m == 1 ? "minute" : "minutes")" }
        let h = (s + 3599) / 3600
        return "\(h) \(h == 1 ? "hour" : "hours")"
    }

    static func durationZh(_ s: Int) -> String {
        if s < 60 { return "\(s) 秒" }
        if s < 3600 { return "\((s + 59) / 60) 分钟" }
        return "\((s + 3599) / 3600) 小时"
    }
}
