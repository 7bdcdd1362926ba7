# Run by gdb attached to a workerd (bench/workerd.mjs, allocatorMiB): asks the runtime's memory
# allocator, tcmalloc (linked into workerd), for its own account of its memory, and optionally to give
# its free pages back to the system. workerd never runs tcmalloc's background release, so pages it
# frees stay resident until asked.
#
# gdb's own inferior calls fail on this machine ("Couldn't write extended state status": the kernel
# refuses gdb's write of the extended register state), so the calls are made by hand, touching only
# the general registers: save them, point the stopped thread at the function on a scratch stack below
# its own, with a return address where a breakpoint waits, continue that thread alone, read rax,
# restore. The thread is one of workerd's idle threads, stopped in a system call (orig_rax set to -1
# so the kernel does not restart it over the call).
#
# Environment: TC_PROPS, comma-separated numeric property names; TC_RELEASE, when set, releases
# everything free after reading them. Prints "TC <name> <bytes>" per property ("None" when tcmalloc
# does not know it) and "TC released <bytes>".
import gdb
import os
import struct

inferior = gdb.selected_inferior()
gdb.execute("set scheduler-locking on")
REGISTERS = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip", "eflags"]


def read(register):
    return int(gdb.parse_and_eval("$" + register)) & 0xFFFFFFFFFFFFFFFF


def address(symbol):
    return int(gdb.parse_and_eval("(long)&" + symbol))


saved = {r: read(r) for r in REGISTERS}
saved_orig_rax = int(gdb.parse_and_eval("$orig_rax"))
return_to = address("_start")
breakpoint = gdb.Breakpoint("*%d" % return_to, internal=True)
scratch = (saved["rsp"] - 65536) & ~0xF
name_at = scratch + 1024
value_at = scratch + 4096


def call(function, *args):
    sp = scratch - 8
    inferior.write_memory(sp, struct.pack("<Q", return_to))
    gdb.execute("set $orig_rax = -1")
    for register, value in zip(["rdi", "rsi", "rdx"], args):
        gdb.execute("set $%s = %d" % (register, value))
    gdb.execute("set $rsp = %d" % sp)
    gdb.execute("set $rip = %d" % address(function))
    gdb.execute("continue")
    return read("rax")


answers = []
try:
    for name in filter(None, os.environ.get("TC_PROPS", "").split(",")):
        inferior.write_memory(name_at, name.encode() + b"\0")
        known = call("MallocExtension_Internal_GetNumericProperty", name_at, len(name), value_at) & 0xFF
        answers.append((name, struct.unpack("<Q", bytes(inferior.read_memory(value_at, 8)))[0] if known else None))
    if os.environ.get("TC_RELEASE"):
        answers.append(("released", call("MallocExtension_Internal_ReleaseMemoryToSystem", 0xFFFFFFFFFFFFFFFF)))
finally:
    breakpoint.delete()
    for register in REGISTERS:
        gdb.execute("set $%s = %d" % (register, saved[register]))
    gdb.execute("set $orig_rax = %d" % saved_orig_rax)
for name, value in answers:
    print("TC %s %s" % (name, value))
