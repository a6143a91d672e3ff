"""The fast memory path: ``fsa_memtop``, a simulation-only wrapper around a
generated ``fsa_top`` that answers the device's AXI4 memory ports inside the
simulator (issue 16 item 4).

The cocotb harness normally answers every memory port with cocotbext-axi's
``AxiRam`` (``fsa/harness/axi_faults.py``: ``FaultyAxiRam``), Python code
that runs on every clock edge a channel is busy; on long runs (benchmarks,
``fsa run`` on big arrays) that is a large part of the simulation's time.
``fsa_memtop`` has ``fsa_top``'s ports and, beside it, one memory (a
SystemVerilog associative array of AXI data words keyed by the beat's
address, shared by all ports) and one slave per port written in Verilog.
Its ``fast`` input chooses at run time: 0, the ``m_axi*`` ports pass
straight through (cocotbext-axi answers them, as on a bare ``fsa_top``: the
regression's bus tests run on this same build), 1, the slaves answer and
the ports are ignored.  The host drives ``s_axil`` from cocotb either way.
Python loads and reads the memory through a backdoor
(``fsa.harness.device.Device`` with ``memory="fast"``):

* ``bd_load`` high at a rising edge: ``$readmemh("fsa_mem_in.hex", mem)``
  (a file in the simulator's working folder, the run folder: ``@index``
  lines and one hex word per beat, written by the harness);
* ``bd_dump`` high at a rising edge: ``$writememh("fsa_mem_out.hex", mem,
  bd_lo, bd_hi)``, the beats ``bd_lo..bd_hi`` that exist (never written
  beats read as zero).

Timing: each slave reproduces, edge by edge, what cocotbext-axi's models do
without pause generators (cocotbext-axi 0.1.x ``StreamSink`` /
``StreamSource`` with a queue limit of 2 on every channel, and the burst
processes of ``FaultyRamRead`` / ``FaultyRamWrite``), so a program takes the
same cycles on both paths.  At every rising edge, with the values before it:

1. the R and B sources: if their output was taken (valid and ready) or is
   not valid, they present the head of their 2-deep queue (valid 1) or drop
   valid;
2. the AR, AW and W sinks: a handshake pushes the request into the sink's
   queue; ready is then "the queue holds fewer than 2";
3. the burst processes (cocotb runs them after every task woken by the
   edge): the read process takes the next AR from its queue as soon as it
   has none and puts its beats into the R queue while that has room (data
   read then); the write process takes the next AW when it has none and no
   B waiting, consumes the W beats queued (memory written, strobes applied)
   and, after the last, puts the B response into the B queue when it has
   room.

Responses are always OKAY (no fault injection: the regression keeps
``FaultyAxiRam`` for everything that tests the bus), bursts are INCR of full
beats (what the DMA and the fetch unit issue).  Verilator only (Icarus has no
associative arrays).  ``tests/test_memwrap.py`` and
``tb/top/test_fastmem.py`` check the text and the equivalence (raw bits and
cycles against ``AxiRam``).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from fsa.hw.fastmem import DUMP_FILE, LOAD_FILE, MODULE
from fsa.hw.waivers import WAIVER_FILE, waiver_text

__all__ = ["MODULE", "LOAD_FILE", "DUMP_FILE", "LINT_WAIVERS", "Port", "parse_ports",
           "memtop_text", "write", "main"]

#: Verilator -Wall waivers of the wrapper (behavioural simulation code)
LINT_WAIVERS = {
    "BLKSEQ": "the slaves' queues are variables updated step by step within one edge, "
              "in the order cocotbext-axi's coroutines run",
    "UNUSEDSIGNAL": "the slaves ignore AxSIZE/AxBURST/AxLOCK/AxCACHE/AxPROT and WLAST "
                    "(full-beat INCR bursts only)",
}

_DECL = re.compile(r"^\s*(input|output)\s+(?:wire\s+|reg\s+)?(?:\[(\d+):0\]\s+)?(\w+)\s*;", re.M)


class Port:
    """One port of the wrapped top: direction, name, width."""

    def __init__(self, direction: str, name: str, width: int):
        self.direction, self.name, self.width = direction, name, width

    def __repr__(self) -> str:
        return f"Port({self.direction!r}, {self.name!r}, {self.width})"


def parse_ports(verilog: str, top: str = "fsa_top") -> list[Port]:
    """The port declarations of module `top` in MyHDL's Verilog (one
    ``input [N:0] name;`` / ``output name;`` per line)."""
    m = re.search(rf"\bmodule\s+{re.escape(top)}\b(.*?)\bendmodule\b", verilog, re.S)
    if m is None:
        raise ValueError(f"module {top} not found")
    ports = [Port(d, n, int(w) + 1 if w else 1) for d, w, n in _DECL.findall(m.group(1))]
    if not ports:
        raise ValueError(f"module {top}: no port declarations found")
    return ports


def _mem_prefixes(ports: list[Port]) -> list[str]:
    pre = sorted({p.name[:-len("_arvalid")] for p in ports if p.name.endswith("_arvalid")
                  and p.name.startswith("m_axi")})
    if not pre:
        raise ValueError("the top has no AXI4 memory port (m_axi*_arvalid)")
    return pre


def memtop_text(ports: list[Port], top: str = "fsa_top") -> str:
    """The Verilog of :data:`MODULE` around `top` with `ports`."""
    by = {p.name: p for p in ports}
    pres = _mem_prefixes(ports)
    dw = by[f"{pres[0]}_rdata"].width
    if dw % 8 or dw & (dw - 1):
        raise ValueError(f"AXI data width {dw} is not a power-of-two number of bytes")
    lb = (dw // 8).bit_length() - 1          # log2(bytes per beat)
    L: list[str] = []
    a = L.append
    a("// Generated by rtl/fsa_memwrap.py: simulation only (the fast memory path).")
    a("// Do not synthesise: an associative-array memory and behavioural AXI4 slaves.")
    a("`timescale 1ns/1ps")
    a(f"module {MODULE} (")
    decl = [f"  {p.direction} wire {f'[{p.width - 1}:0] ' if p.width > 1 else ''}{p.name}"
            for p in ports]
    decl += ["  input wire fast", "  input wire bd_load", "  input wire bd_dump",
             "  input wire [63:0] bd_lo", "  input wire [63:0] bd_hi"]
    a(",\n".join(decl))
    a(");")
    a(f"  logic [{dw - 1}:0] mem [longint unsigned];")
    inst = []
    for p in ports:
        w = f"[{p.width - 1}:0] " if p.width > 1 else ""
        if not p.name.startswith("m_axi"):
            inst.append(f"    .{p.name}({p.name})")
            continue
        # the device's side of a memory port: d_<name>; the slaves' outputs: f_<name>
        a(f"  wire {w}d_{p.name};")
        inst.append(f"    .{p.name}(d_{p.name})")
        if p.direction == "input":
            a(f"  reg {w}f_{p.name};")
            a(f"  assign d_{p.name} = fast ? f_{p.name} : {p.name};")
        else:
            a(f"  assign {p.name} = d_{p.name};")
    a(f"  {top} dut (\n" + ",\n".join(inst) + "\n  );")
    for pre in pres:
        L.extend(_port_state(pre, by, dw))
    a("  always @(posedge clk) begin")
    a(f"    if (bd_load) $readmemh(\"{LOAD_FILE}\", mem);")
    a(f"    if (bd_dump) $writememh(\"{DUMP_FILE}\", mem, bd_lo, bd_hi);")
    for pre in pres:
        L.extend(_port_edge(pre, by, dw, lb))
    a("  end")
    a("endmodule")
    return "\n".join(L) + "\n"


def _w(by, name) -> str:
    p = by[name]
    return f"[{p.width - 1}:0] " if p.width > 1 else ""


def _port_state(pre: str, by, dw: int) -> list[str]:
    """The state of one port's slave: the queues (2 deep), the current bursts."""
    idw, bidw = _w(by, f"{pre}_rid"), _w(by, f"{pre}_bid")
    lw = _w(by, f"{pre}_arlen")
    s = f"{pre}_"
    return [
        f"  // {pre}: AR queue, current read burst, R queue",
        f"  reg [63:0] {s}arq_a [0:1]; reg {lw}{s}arq_l [0:1]; reg {idw}{s}arq_i [0:1]; integer {s}arq_n;",
        f"  reg {s}rc_v; reg [63:0] {s}rc_a; reg [8:0] {s}rc_left; reg {idw}{s}rc_i;",
        f"  reg [{dw - 1}:0] {s}rq_d [0:1]; reg {s}rq_l [0:1]; reg {idw}{s}rq_i [0:1]; integer {s}rq_n;",
        f"  // {pre}: AW queue, W queue, current write burst, B waiting, B queue",
        f"  reg [63:0] {s}awq_a [0:1]; reg {lw}{s}awq_l [0:1]; reg {bidw}{s}awq_i [0:1]; integer {s}awq_n;",
        f"  reg [{dw - 1}:0] {s}wq_d [0:1]; reg [{dw // 8 - 1}:0] {s}wq_s [0:1]; integer {s}wq_n;",
        f"  reg {s}wc_v; reg [63:0] {s}wc_a; reg [8:0] {s}wc_left; reg {bidw}{s}wc_i;",
        f"  reg {s}bw_v; reg {bidw}{s}bw_i;",
        f"  reg {bidw}{s}bq_i [0:1]; integer {s}bq_n;",
        f"  reg [{dw - 1}:0] {s}word, {s}mask;",
        f"  integer {s}k;",
    ]


def _port_edge(pre: str, by, dw: int, lb: int) -> list[str]:
    """One rising edge of one port's slave (see the module docstring)."""
    s, d, f = f"{pre}_", f"d_{pre}_", f"f_{pre}_"
    nb = dw // 8
    L = [
        f"    // ---------------- {pre}",
        "    if (rst || !fast) begin",
        f"      {f}arready <= 1'b0; {f}awready <= 1'b0; {f}wready <= 1'b0;",
        f"      {f}rvalid <= 1'b0; {f}bvalid <= 1'b0;",
        f"      {s}arq_n = 0; {s}rq_n = 0; {s}rc_v = 1'b0; {s}awq_n = 0; {s}wq_n = 0; {s}bq_n = 0;",
        f"      {s}wc_v = 1'b0; {s}bw_v = 1'b0;",
        "    end else begin",
        "      // 1. the sources (R, B)",
        f"      if (({f}rvalid && {d}rready) || !{f}rvalid) begin",
        f"        if ({s}rq_n > 0) begin",
        f"          {f}rvalid <= 1'b1; {f}rdata <= {s}rq_d[0]; {f}rlast <= {s}rq_l[0]; {f}rid <= {s}rq_i[0];",
        f"          {f}rresp <= 2'b00;",
        f"          {s}rq_d[0] = {s}rq_d[1]; {s}rq_l[0] = {s}rq_l[1]; {s}rq_i[0] = {s}rq_i[1];",
        f"          {s}rq_n = {s}rq_n - 1;",
        f"        end else {f}rvalid <= 1'b0;",
        "      end",
        f"      if (({f}bvalid && {d}bready) || !{f}bvalid) begin",
        f"        if ({s}bq_n > 0) begin",
        f"          {f}bvalid <= 1'b1; {f}bid <= {s}bq_i[0]; {f}bresp <= 2'b00;",
        f"          {s}bq_i[0] = {s}bq_i[1]; {s}bq_n = {s}bq_n - 1;",
        f"        end else {f}bvalid <= 1'b0;",
        "      end",
        "      // 2. the sinks (AR, AW, W)",
        f"      if ({d}arvalid && {f}arready) begin",
        f"        {s}arq_a[{s}arq_n] = 64'({d}araddr); {s}arq_l[{s}arq_n] = {d}arlen;"
        f" {s}arq_i[{s}arq_n] = {d}arid;",
        f"        {s}arq_n = {s}arq_n + 1;",
        "      end",
        f"      {f}arready <= {s}arq_n < 2;",
        f"      if ({d}awvalid && {f}awready) begin",
        f"        {s}awq_a[{s}awq_n] = 64'({d}awaddr); {s}awq_l[{s}awq_n] = {d}awlen;"
        f" {s}awq_i[{s}awq_n] = {d}awid;",
        f"        {s}awq_n = {s}awq_n + 1;",
        "      end",
        f"      {f}awready <= {s}awq_n < 2;",
        f"      if ({d}wvalid && {f}wready) begin",
        f"        {s}wq_d[{s}wq_n] = {d}wdata; {s}wq_s[{s}wq_n] = {d}wstrb; {s}wq_n = {s}wq_n + 1;",
        "      end",
        f"      {f}wready <= {s}wq_n < 2;",
        "      // 3. the burst processes",
        f"      for ({s}k = 0; {s}k < 3; {s}k = {s}k + 1) begin",
        f"        if (!{s}rc_v && {s}arq_n > 0) begin",
        f"          {s}rc_v = 1'b1; {s}rc_a = {s}arq_a[0] >> {lb}; {s}rc_left = 9'({s}arq_l[0]) + 9'd1;",
        f"          {s}rc_i = {s}arq_i[0];",
        f"          {s}arq_a[0] = {s}arq_a[1]; {s}arq_l[0] = {s}arq_l[1]; {s}arq_i[0] = {s}arq_i[1];",
        f"          {s}arq_n = {s}arq_n - 1;",
        "        end",
        f"        if ({s}rc_v && {s}rq_n < 2) begin",
        f"          {s}rq_d[{s}rq_n] = mem.exists({s}rc_a) ? mem[{s}rc_a] : '0;",
        f"          {s}rq_l[{s}rq_n] = {s}rc_left == 9'd1; {s}rq_i[{s}rq_n] = {s}rc_i;",
        f"          {s}rq_n = {s}rq_n + 1; {s}rc_a = {s}rc_a + 64'd1; {s}rc_left = {s}rc_left - 9'd1;",
        f"          if ({s}rc_left == 9'd0) {s}rc_v = 1'b0;",
        "        end",
        f"        if (!{s}wc_v && !{s}bw_v && {s}awq_n > 0) begin",
        f"          {s}wc_v = 1'b1; {s}wc_a = {s}awq_a[0] >> {lb}; {s}wc_left = 9'({s}awq_l[0]) + 9'd1;",
        f"          {s}wc_i = {s}awq_i[0];",
        f"          {s}awq_a[0] = {s}awq_a[1]; {s}awq_l[0] = {s}awq_l[1]; {s}awq_i[0] = {s}awq_i[1];",
        f"          {s}awq_n = {s}awq_n - 1;",
        "        end",
        f"        if ({s}wc_v && {s}wq_n > 0) begin",
        f"          {s}word = mem.exists({s}wc_a) ? mem[{s}wc_a] : '0;",
        f"          for (int b = 0; b < {nb}; b = b + 1) {s}mask[b*8 +: 8] = {{8{{{s}wq_s[0][b]}}}};",
        f"          mem[{s}wc_a] = ({s}word & ~{s}mask) | ({s}wq_d[0] & {s}mask);",
        f"          {s}wq_d[0] = {s}wq_d[1]; {s}wq_s[0] = {s}wq_s[1]; {s}wq_n = {s}wq_n - 1;",
        f"          {s}wc_a = {s}wc_a + 64'd1; {s}wc_left = {s}wc_left - 9'd1;",
        f"          if ({s}wc_left == 9'd0) begin {s}wc_v = 1'b0; {s}bw_v = 1'b1; {s}bw_i = {s}wc_i; end",
        "        end",
        f"        if ({s}bw_v && {s}bq_n < 2) begin",
        f"          {s}bq_i[{s}bq_n] = {s}bw_i; {s}bq_n = {s}bq_n + 1; {s}bw_v = 1'b0;",
        "        end",
        "      end",
        "    end",
    ]
    return L


def write(outdir: "str | Path", top_verilog: "str | Path", top: str = "fsa_top") -> Path:
    """Write ``<outdir>/fsa_memtop.v`` (SystemVerilog, which Verilator reads
    by default) and its waiver file for the `top` in file `top_verilog`."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / f"{MODULE}.v"
    path.write_text(memtop_text(parse_ports(Path(top_verilog).read_text(), top), top))
    (outdir / WAIVER_FILE).write_text(waiver_text({MODULE: LINT_WAIVERS}))
    return path


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(description="write the fast-memory wrapper fsa_memtop")
    ap.add_argument("top_verilog", help="the generated fsa_top.v")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--top", default="fsa_top", help="the wrapped module")
    args = ap.parse_args(argv)
    print(write(args.out, args.top_verilog, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
