// A program without Coldstart whose threads the kernel names in every way a
// report meets (issue 26, item 3: thread names under `coldstart run`): C
// threads named with pthread_setname_np, one renamed halfway, one never
// named (NamedWork), and an `async` main whose work runs on libdispatch's
// workers, which libdispatch names after their root queue's label.
import Foundation
import NamedWork

let failed = named_work_run()
guard failed == 0 else {
    FileHandle.standardError.write(Data("NamedThreads: pthread error \(failed)\n".utf8))
    exit(1)
}
// Off the main actor: on a worker of the cooperative pool.
await Task.detached { named_work_burn(30) }.value
print("named threads done")
