// Which frame answers a request: its own id, or the unsolicited id on the daemon's refusal of a
// request it never read (touchgate_wire.h's one rule, which the C module follows too).
import Testing
import TouchGateWire

@Suite("Wire: which frame answers a request")
struct AnswerTests {
    let mine: UInt32 = 7
    let unsolicited = WireLimits.unsolicitedRequestID

    @Test func aFrameForItsOwnRequestAnswersItAndAnotherRequestsDoesNot() {
        #expect(WireLimits.answers(Frame(.result, requestID: mine, [Field(.code, Int32(0))]), request: mine))
        #expect(WireLimits.answers(Frame(.progress, requestID: mine), request: mine))
        #expect(!WireLimits.answers(Frame(.result, requestID: 8, [Field(.code, Int32(0))]), request: mine))
    }

    @Test func theUnsolicitedIdAnswersOnlyAsARefusalOfARequestNeverRead() {
        for refusal in [Outcome.busy, .badRequest, .systemCancel] {
            #expect(
                WireLimits.answers(
                    Frame(.result, requestID: unsolicited, [Field(.code, refusal.rawValue)]), request: mine))
        }
        // A success, any other code, a result without a code, or another kind: never taken.
        for code in [Outcome.success, .internalError, .notPermitted] {
            #expect(
                !WireLimits.answers(
                    Frame(.result, requestID: unsolicited, [Field(.code, code.rawValue)]), request: mine))
        }
        #expect(!WireLimits.answers(Frame(.result, requestID: unsolicited), request: mine))
        #expect(
            !WireLimits.answers(
                Frame(.progress, requestID: unsolicited, [Field(.code, Outcome.busy.rawValue)]), request: mine))
    }
}
