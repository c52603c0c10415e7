// A launch with known costs, each measured by the program itself (thread CPU
// time): a shared library's constructor (~30 ms, before main), three functions
// run in sequence (~150, ~100, ~50 ms) and a lazily initialised global (~20 ms,
// first touched after main). Phase boundaries put the first function, the
// other two and the global's first touch in three phases of their own, so a
// report's phase attribution can be checked. Prints the measured milliseconds
// as one JSON object on stderr, with how long its threads waited for a CPU
// ("ownLoad", OwnLoad.swift): what the tests judge a starved run by.
import Coldstart
import Glibc
import SlowInit

@inline(never)
func burnOneHundredFiftyMilliseconds() -> UInt64 { measure { burnCPU(milliseconds: 150) } }

@inline(never)
func burnOneHundredMilliseconds() -> UInt64 { measure { burnCPU(milliseconds: 100) } }

@inline(never)
func burnFiftyMilliseconds() -> UInt64 { measure { burnCPU(milliseconds: 50) } }

let first = burnOneHundredFiftyMilliseconds()
Coldstart.mark("first burnt", isPhaseBoundary: true)
let second = burnOneHundredMilliseconds()
let third = burnFiftyMilliseconds()
Coldstart.mark("functions burnt", isPhaseBoundary: true)
let entries = slowGlobalTable.count   // first touch: runs the initializer now
Coldstart.ready()
let ownLoad = OwnLoad.read()

func ms(_ ns: UInt64) -> String { String(Double(ns / 1000) / 1000) }
fputs("""
{"constructor":\(ms(slow_init_constructor_cpu_ns())),\
"burnOneHundredFiftyMilliseconds":\(ms(first)),\
"burnOneHundredMilliseconds":\(ms(second)),\
"burnFiftyMilliseconds":\(ms(third)),\
"slowGlobalTable":\(ms(slowGlobalInitializerNs)),"entries":\(entries),\
"environmentAtInit":\(slow_init_saw_environment() != 0),"ownLoad":\(ownLoad.json)}

""", stderr)
