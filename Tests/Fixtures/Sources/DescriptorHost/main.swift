// A host that does what daemons do at start-up: closes every descriptor above
// stderr, then reuses the numbers (here, the range where the off-CPU watcher
// keeps its /proc files). The profiler must not close or disturb them.
// Exit 0 when every descriptor it owns is still open and reads back its file.
import Coldstart
import Foundation

for fd in Int32(3)..<1024 { close(fd) }
let source = open("/proc/self/exe", O_RDONLY)
guard source >= 0 else { exit(2) }
let mine = Array(Int32(760)..<Int32(840))
for fd in mine {
    // Linux's dup2 fails with EBUSY while another thread is mid-open on that
    // number; robust code retries.
    var tries = 0
    while dup2(source, fd) != fd {
        tries += 1
        guard errno == EBUSY, tries < 1000 else { print("dup2 onto \(fd): errno \(errno)"); exit(2) }
    }
}
usleep(60_000)   // the watcher's looks now find these numbers taken
var header = [UInt8](repeating: 0, count: 4)
let intact = mine.filter { fd in
    pread(fd, &header, 4, 0) == 4 && header == [0x7F, 0x45, 0x4C, 0x46]
}
Coldstart.ready()
print("\(intact.count) of \(mine.count) descriptors intact")
exit(intact.count == mine.count ? 0 : 1)
