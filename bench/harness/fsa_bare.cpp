// fsa_bare: run a recorded program on the Verilated fsa_top without cocotb.
//
// The ceiling of simulation speed: the same Verilator model the cocotb
// benches use, driven from C++ (bench/harness/bare.py builds it with
// `verilator --cc --exe --build` and writes the case file).  The host side is
// answered here: an AXI4-Lite master that pushes the instruction words and
// starts the device, and one AXI4 memory (one port, any data width that
// Verilator gives as an integer (<= 64 bits) or a VlWide (wider), INCR bursts,
// always ready, OKAY responses) backed by a sparse byte store.
//
// Usage: fsa_bare CASE OUT
//   CASE, one item per line (numbers in hex unless said otherwise):
//     C <ctrl base>            address of the register block on s_axil
//     P <push offset>  S <start offset>
//     Q <queue depth, decimal> (words pushed before start; the rest while it runs)
//     W <word>                 an instruction word, in program order
//     M <addr> <bytes as hex>  an initial memory segment
//     D <addr> <size, decimal> a region to dump after the run
//     R <name> <offset>        a register to read after the run
//     L <max cycles, decimal>  the run's cycle limit (error if irq never rises)
//     I <cycles, decimal>      clock this many idle cycles afterwards (timed apart)
//   OUT: "key value" lines: cycles (all simulated clock cycles up to the end of
//   the register reads), run_cycles (from the start write's response to irq),
//   cpu_s / wall_s (of those
//   cycles), idle_cycles / idle_cpu_s, "R name value", "D addr hexbytes".
// Exit status: 0 done (irq), 2 bad input, 3 cycle limit reached.
#include "Vfsa_top.h"
#include "verilated.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <deque>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

// ------------------------------------------------------------------ memory
class SparseMem {
  public:
    static constexpr uint64_t kPage = 1u << 16;
    uint8_t read(uint64_t a) const {
        auto it = pages_.find(a / kPage);
        return it == pages_.end() ? 0 : it->second[a % kPage];
    }
    void write(uint64_t a, uint8_t v) {
        auto& p = pages_[a / kPage];
        if (p.empty()) p.assign(kPage, 0);
        p[a % kPage] = v;
    }
  private:
    std::unordered_map<uint64_t, std::vector<uint8_t>> pages_;
};

struct Burst {
    uint64_t addr;
    unsigned len, size, beat;     // beats - 1, log2 bytes per beat, beats done
    uint64_t beat_addr() const { return addr + (uint64_t(beat) << size); }
};

// ------------------------------------------------------------------ host ops
struct LiteOp {
    bool write;
    uint32_t addr, data;
    std::string name;             // a register read's name (for the output)
};

struct Case {
    uint32_t ctrl = 0x8000, push = 0, start = 4;
    size_t queue = 0;
    std::vector<uint32_t> words;
    std::vector<std::pair<uint64_t, std::string>> mem;
    std::vector<std::pair<uint64_t, size_t>> dumps;
    std::vector<std::pair<std::string, uint32_t>> regs;
    uint64_t max_cycles = 1000000, idle = 0;
};

bool parse(const char* path, Case& c) {
    std::ifstream f(path);
    if (!f) return false;
    std::string line;
    while (std::getline(f, line)) {
        std::istringstream s(line);
        std::string k;
        if (!(s >> k)) continue;
        if (k == "C") s >> std::hex >> c.ctrl;
        else if (k == "P") s >> std::hex >> c.push;
        else if (k == "S") s >> std::hex >> c.start;
        else if (k == "Q") s >> std::dec >> c.queue;
        else if (k == "W") { uint32_t w; s >> std::hex >> w; c.words.push_back(w); }
        else if (k == "M") { uint64_t a; std::string d; s >> std::hex >> a >> d; c.mem.emplace_back(a, d); }
        else if (k == "D") { uint64_t a; size_t n; s >> std::hex >> a >> std::dec >> n; c.dumps.emplace_back(a, n); }
        else if (k == "R") { std::string n; uint32_t o; s >> n >> std::hex >> o; c.regs.emplace_back(n, o); }
        else if (k == "L") s >> std::dec >> c.max_cycles;
        else if (k == "I") s >> std::dec >> c.idle;
        else { std::fprintf(stderr, "fsa_bare: unknown case line: %s\n", line.c_str()); return false; }
        if (s.fail()) { std::fprintf(stderr, "fsa_bare: bad case line: %s\n", line.c_str()); return false; }
    }
    return true;
}

// ------------------------------------------------------------------ data words
// Verilator's type for a port: an integer up to 64 bits, VlWide<N> (N 32-bit
// words, least significant first) above; both byte-addressed here, byte i
// being data bits 8i+7:8i (AXI's lane i).
template <class T> uint8_t data_byte(const T& port, unsigned i) { return uint8_t(uint64_t(port) >> (8 * i)); }
template <std::size_t N> uint8_t data_byte(const VlWide<N>& port, unsigned i) {
    return uint8_t(port[i / 4] >> (8 * (i % 4)));
}
template <class T> void set_data(T& port, const uint8_t* b) {
    uint64_t v = 0;
    for (unsigned i = 0; i < sizeof(T); ++i) v |= uint64_t(b[i]) << (8 * i);
    port = T(v);
}
template <std::size_t N> void set_data(VlWide<N>& port, const uint8_t* b) {
    for (std::size_t w = 0; w < N; ++w)
        port[w] = uint32_t(b[4 * w]) | uint32_t(b[4 * w + 1]) << 8 | uint32_t(b[4 * w + 2]) << 16 |
                  uint32_t(b[4 * w + 3]) << 24;
}

int hexval(char ch) {
    return ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10;
}

// ------------------------------------------------------------------ the bench
class Bench {
  public:
    // bytes per AXI data word (Verilator's port types are whole bytes here: 32 bits and up)
    static constexpr unsigned kLanes = sizeof(decltype(Vfsa_top::m_axi_rdata));
    explicit Bench(VerilatedContext* ctx) : top_(new Vfsa_top{ctx}) {}
    ~Bench() { top_->final(); }

    SparseMem mem;
    std::deque<LiteOp> ops;                       // the host's register accesses, in order
    std::vector<std::pair<std::string, uint32_t>> read_back;
    uint64_t cycles = 0;
    unsigned refused = 0;

    // one clock cycle: present the bench's outputs, let the model settle,
    // sample both sides (what the rising edge sees), clock, update the bench
    void cycle() {
        Vfsa_top* t = top_.get();
        // --- the bench's outputs, from its state before the edge
        const LiteOp* op = ops.empty() ? nullptr : &ops.front();
        t->s_axil_awvalid = op && op->write && !aw_done_;
        t->s_axil_awaddr = op ? op->addr : 0;
        t->s_axil_awprot = 0;
        t->s_axil_wvalid = op && op->write && !w_done_;
        t->s_axil_wdata = op ? op->data : 0;
        t->s_axil_wstrb = 0xF;
        t->s_axil_bready = 1;
        t->s_axil_arvalid = op && !op->write && !ar_done_;
        t->s_axil_araddr = op ? op->addr : 0;
        t->s_axil_arprot = 0;
        t->s_axil_rready = 1;
        t->m_axi_arready = 1;
        t->m_axi_awready = 1;
        t->m_axi_wready = !aw_q_.empty();
        t->m_axi_bvalid = b_pending_ > 0;
        t->m_axi_bid = 0;
        t->m_axi_bresp = 0;
        const bool rv = !ar_q_.empty();
        t->m_axi_rvalid = rv;
        t->m_axi_rid = 0;
        t->m_axi_rresp = 0;
        t->m_axi_rlast = rv && ar_q_.front().beat == ar_q_.front().len;
        read_beat(rv ? &ar_q_.front() : nullptr, t->m_axi_rdata);
        t->clk = 0;
        t->eval();
        // --- what the edge sees
        const bool l_aw = t->s_axil_awvalid && t->s_axil_awready;
        const bool l_w = t->s_axil_wvalid && t->s_axil_wready;
        const bool l_b = t->s_axil_bvalid && t->s_axil_bready;
        const bool l_ar = t->s_axil_arvalid && t->s_axil_arready;
        const bool l_r = t->s_axil_rvalid && t->s_axil_rready;
        const uint32_t l_bresp = t->s_axil_bresp, l_rdata = t->s_axil_rdata;
        const bool m_ar = t->m_axi_arvalid && t->m_axi_arready;
        const Burst ar{t->m_axi_araddr, t->m_axi_arlen, t->m_axi_arsize, 0};
        const bool m_r = rv && t->m_axi_rready;
        const bool m_aw = t->m_axi_awvalid && t->m_axi_awready;
        const Burst aw{t->m_axi_awaddr, t->m_axi_awlen, t->m_axi_awsize, 0};
        const bool m_w = t->m_axi_wvalid && t->m_axi_wready;
        uint8_t wdata[kLanes];
        for (unsigned i = 0; i < kLanes; ++i) wdata[i] = data_byte(t->m_axi_wdata, i);
        const uint64_t wstrb = t->m_axi_wstrb;
        const bool m_b = t->m_axi_bvalid && t->m_axi_bready;
        t->clk = 1;
        t->eval();
        ++cycles;
        // --- the bench's state after the edge
        if (m_r) {
            Burst& b = ar_q_.front();
            if (b.beat++ == b.len) ar_q_.pop_front();
        }
        if (m_ar) ar_q_.push_back(ar);
        if (m_w) {
            Burst& b = aw_q_.front();
            const uint64_t a = b.beat_addr();
            for (unsigned i = 0; i < kLanes; ++i)
                if ((wstrb >> i) & 1) mem.write((a & ~uint64_t(kLanes - 1)) + i, wdata[i]);
            if (b.beat++ == b.len) { aw_q_.pop_front(); ++b_pending_; }
        }
        if (m_aw) aw_q_.push_back(aw);
        if (m_b) --b_pending_;
        if (op) {
            if (l_aw) aw_done_ = true;
            if (l_w) w_done_ = true;
            if (l_ar) ar_done_ = true;
            if (op->write && l_b) {
                if (l_bresp != 0) ++refused;
                next_op();
            } else if (!op->write && l_r) {
                read_back.emplace_back(op->name, l_rdata);
                next_op();
            }
        }
    }

    bool irq() const { return top_->irq; }
    void set_rst(bool v) { top_->rst = v; }

  private:
    // the data word of a read burst's current beat (all zero without a burst)
    template <class T> void read_beat(const Burst* b, T& port) const {
        uint8_t bytes[kLanes] = {};
        if (b) {
            const uint64_t base = b->beat_addr() & ~uint64_t(kLanes - 1);
            for (unsigned i = 0; i < kLanes; ++i) bytes[i] = mem.read(base + i);
        }
        set_data(port, bytes);
    }
    void next_op() {
        ops.pop_front();
        aw_done_ = w_done_ = ar_done_ = false;
    }

    std::unique_ptr<Vfsa_top> top_;
    bool aw_done_ = false, w_done_ = false, ar_done_ = false;
    std::deque<Burst> ar_q_, aw_q_;
    unsigned b_pending_ = 0;
};

double cpu_now() { return double(std::clock()) / CLOCKS_PER_SEC; }

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: fsa_bare CASE OUT\n");
        return 2;
    }
    Case c;
    if (!parse(argv[1], c)) return 2;
    auto ctx = std::make_unique<VerilatedContext>();
    Bench b(ctx.get());
    static_assert(sizeof(decltype(Vfsa_top::m_axi_wstrb)) * 8 >= Bench::kLanes, "fsa_bare: strobe narrower than the data");
    for (auto& [addr, hex] : c.mem)
        for (size_t i = 0; i + 1 < hex.size(); i += 2)
            b.mem.write(addr + i / 2, uint8_t(hexval(hex[i]) << 4 | hexval(hex[i + 1])));

    const double cpu0 = cpu_now();
    const auto wall0 = std::chrono::steady_clock::now();
    b.set_rst(true);
    for (int i = 0; i < 4; ++i) b.cycle();
    b.set_rst(false);
    for (int i = 0; i < 2; ++i) b.cycle();
    const size_t first = c.queue && c.words.size() > c.queue ? c.queue : c.words.size();
    for (size_t i = 0; i < first; ++i) b.ops.push_back({true, c.ctrl + c.push, c.words[i], ""});
    b.ops.push_back({true, c.ctrl + c.start, 1, ""});
    for (size_t i = first; i < c.words.size(); ++i) b.ops.push_back({true, c.ctrl + c.push, c.words[i], ""});
    // the pushes before start are not part of the run
    while (b.ops.size() > c.words.size() - first) b.cycle();
    const uint64_t start_cycle = b.cycles;
    while (!b.irq() && b.cycles - start_cycle < c.max_cycles) b.cycle();
    const bool done = b.irq();
    const uint64_t run_cycles = b.cycles - start_cycle;
    while (!b.ops.empty() && b.cycles - start_cycle < c.max_cycles + 100000) b.cycle();  // rest of the pushes
    for (auto& [name, off] : c.regs) b.ops.push_back({false, c.ctrl + off, 0, name});
    while (!b.ops.empty()) b.cycle();
    const double cpu_s = cpu_now() - cpu0;
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

    const double idle0 = cpu_now();
    for (uint64_t i = 0; i < c.idle; ++i) b.cycle();
    const double idle_cpu_s = cpu_now() - idle0;

    std::FILE* out = std::fopen(argv[2], "w");
    if (!out) return 2;
    std::fprintf(out, "done %d\ncycles %llu\nrun_cycles %llu\ncpu_s %.6f\nwall_s %.6f\n", int(done),
                 (unsigned long long)(b.cycles - c.idle), (unsigned long long)run_cycles, cpu_s, wall_s);
    std::fprintf(out, "idle_cycles %llu\nidle_cpu_s %.6f\nrefused %u\n", (unsigned long long)c.idle,
                 idle_cpu_s, b.refused);
    for (auto& [name, v] : b.read_back) std::fprintf(out, "R %s %u\n", name.c_str(), v);
    for (auto& [addr, n] : c.dumps) {
        std::fprintf(out, "D %llx ", (unsigned long long)addr);
        for (size_t i = 0; i < n; ++i) std::fprintf(out, "%02x", b.mem.read(addr + i));
        std::fprintf(out, "\n");
    }
    std::fclose(out);
    return done ? 0 : 3;
}
