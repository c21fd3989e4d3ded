// One user's turns run one after another, in the order asked; another user's run beside them.
import Testing
@testable import TouchGateCore
import TouchGateTestSupport

@Suite("Core: one thing at a time per user")
@CoreActor struct UserTurnsTests {
    @Test func aUsersTurnsRunOneAfterAnotherWhileAnotherUsersRunBeside() async throws {
        let turns = UserTurns()
        var log: [String] = []
        let gate = OneShot<Void>()
        let first = Running {
            await turns.run("alice") {
                log.append("alice 1 starts")
                await gate.wait()  // holds alice's turn until the test lets go
                log.append("alice 1 ends")
            }
        }
        let second = Running { await turns.run("alice") { log.append("alice 2") } }
        let other = Running { await turns.run("bob") { log.append("bob") } }
        #expect(await other.value() != nil)  // bob is not held up by alice's turn
        #expect(!second.isFinished)
        gate.set(())
        #expect(await first.value() != nil)
        #expect(await second.value() != nil)
        #expect(log == ["alice 1 starts", "bob", "alice 1 ends", "alice 2"])
    }
}
