package filter

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/bpf"
)

// run executes a validated classic BPF program on pkt with the kernel's
// and libpcap's semantics: a load past the end of the packet, or a
// division by zero, ends the program with 0 (no match). It allocates
// nothing. (golang.org/x/net/bpf's VM gives the same verdicts, which the
// tests check, but dispatches on interface values and is several times
// slower.)
func run(prog []bpf.RawInstruction, pkt []byte) uint32 {
	var a, x uint32
	var mem [memWords]uint32
	n := uint32(len(pkt))
	for pc := 0; pc < len(prog); pc++ {
		ins := &prog[pc]
		k := ins.K
		switch ins.Op {
		case bpfLD | bpfW | bpfABS:
			if k > n || n-k < 4 {
				return 0
			}
			a = binary.BigEndian.Uint32(pkt[k:])
		case bpfLD | bpfH | bpfABS:
			if k > n || n-k < 2 {
				return 0
			}
			a = uint32(binary.BigEndian.Uint16(pkt[k:]))
		case bpfLD | bpfB | bpfABS:
			if k >= n {
				return 0
			}
			a = uint32(pkt[k])
		case bpfLD | bpfW | bpfIND:
			o := x + k
			if o < x || o > n || n-o < 4 {
				return 0
			}
			a = binary.BigEndian.Uint32(pkt[o:])
		case bpfLD | bpfH | bpfIND:
			o := x + k
			if o < x || o > n || n-o < 2 {
				return 0
			}
			a = uint32(binary.BigEndian.Uint16(pkt[o:]))
		case bpfLD | bpfB | bpfIND:
			o := x + k
			if o < x || o >= n {
				return 0
			}
			a = uint32(pkt[o])
		case bpfLD | bpfW | bpfLEN:
			a = n
		case bpfLDX | bpfW | bpfLEN:
			x = n
		case bpfLD | bpfIMM:
			a = k
		case bpfLDX | bpfIMM:
			x = k
		case bpfLD | bpfMEM:
			a = mem[k]
		case bpfLDX | bpfMEM:
			x = mem[k]
		case bpfLDX | bpfB | bpfMSH:
			if k >= n {
				return 0
			}
			x = uint32(pkt[k]&0x0f) << 2
		case bpfST:
			mem[k] = a
		case bpfSTX:
			mem[k] = x
		case bpfALU | bpfADD | bpfK:
			a += k
		case bpfALU | bpfSUB | bpfK:
			a -= k
		case bpfALU | bpfMUL | bpfK:
			a *= k
		case bpfALU | bpfDIV | bpfK:
			a /= k // validated: k != 0
		case bpfALU | bpfMOD | bpfK:
			a %= k
		case bpfALU | bpfAND | bpfK:
			a &= k
		case bpfALU | bpfOR | bpfK:
			a |= k
		case bpfALU | bpfXOR | bpfK:
			a ^= k
		case bpfALU | bpfLSH | bpfK:
			a = shl(a, k)
		case bpfALU | bpfRSH | bpfK:
			a = shr(a, k)
		case bpfALU | bpfADD | bpfX:
			a += x
		case bpfALU | bpfSUB | bpfX:
			a -= x
		case bpfALU | bpfMUL | bpfX:
			a *= x
		case bpfALU | bpfDIV | bpfX:
			if x == 0 {
				return 0
			}
			a /= x
		case bpfALU | bpfMOD | bpfX:
			if x == 0 {
				return 0
			}
			a %= x
		case bpfALU | bpfAND | bpfX:
			a &= x
		case bpfALU | bpfOR | bpfX:
			a |= x
		case bpfALU | bpfXOR | bpfX:
			a ^= x
		case bpfALU | bpfLSH | bpfX:
			a = shl(a, x)
		case bpfALU | bpfRSH | bpfX:
			a = shr(a, x)
		case bpfALU | bpfNEG:
			a = -a
		case bpfJMP | bpfJA:
			pc += int(k)
		case bpfJMP | bpfJEQ | bpfK:
			pc += branch(a == k, ins)
		case bpfJMP | bpfJGT | bpfK:
			pc += branch(a > k, ins)
		case bpfJMP | bpfJGE | bpfK:
			pc += branch(a >= k, ins)
		case bpfJMP | bpfJSET | bpfK:
			pc += branch(a&k != 0, ins)
		case bpfJMP | bpfJEQ | bpfX:
			pc += branch(a == x, ins)
		case bpfJMP | bpfJGT | bpfX:
			pc += branch(a > x, ins)
		case bpfJMP | bpfJGE | bpfX:
			pc += branch(a >= x, ins)
		case bpfJMP | bpfJSET | bpfX:
			pc += branch(a&x != 0, ins)
		case bpfRET | bpfK:
			return k
		case bpfRET | bpfA:
			return a
		case bpfMISC | bpfTAX:
			x = a
		case bpfMISC | bpfTXA:
			a = x
		default:
			return 0 // validated programs have none
		}
	}
	return 0
}

func branch(cond bool, ins *bpf.RawInstruction) int {
	if cond {
		return int(ins.Jt)
	}
	return int(ins.Jf)
}

func shl(a, k uint32) uint32 {
	if k >= 32 {
		return 0
	}
	return a << k
}

func shr(a, k uint32) uint32 {
	if k >= 32 {
		return 0
	}
	return a >> k
}

// validate checks a program the way the kernel does before attaching it:
// known opcodes, jumps that stay inside, scratch memory indexes in range,
// no constant division by zero, and a return at the end.
func validate(prog []bpf.RawInstruction) error {
	if len(prog) == 0 {
		return fmt.Errorf("empty program")
	}
	if len(prog) > maxInstructions {
		return fmt.Errorf("%d instructions, more than the %d allowed", len(prog), maxInstructions)
	}
	for pc, ins := range prog {
		rest := len(prog) - pc - 1
		switch op := ins.Op; op {
		case bpfLD | bpfW | bpfABS, bpfLD | bpfH | bpfABS, bpfLD | bpfB | bpfABS,
			bpfLD | bpfW | bpfIND, bpfLD | bpfH | bpfIND, bpfLD | bpfB | bpfIND,
			bpfLD | bpfW | bpfLEN, bpfLDX | bpfW | bpfLEN, bpfLD | bpfIMM, bpfLDX | bpfIMM,
			bpfLDX | bpfB | bpfMSH,
			bpfALU | bpfADD | bpfK, bpfALU | bpfSUB | bpfK, bpfALU | bpfMUL | bpfK,
			bpfALU | bpfAND | bpfK, bpfALU | bpfOR | bpfK, bpfALU | bpfXOR | bpfK,
			bpfALU | bpfLSH | bpfK, bpfALU | bpfRSH | bpfK,
			bpfALU | bpfADD | bpfX, bpfALU | bpfSUB | bpfX, bpfALU | bpfMUL | bpfX,
			bpfALU | bpfDIV | bpfX, bpfALU | bpfMOD | bpfX, bpfALU | bpfAND | bpfX,
			bpfALU | bpfOR | bpfX, bpfALU | bpfXOR | bpfX, bpfALU | bpfLSH | bpfX,
			bpfALU | bpfRSH | bpfX, bpfALU | bpfNEG,
			bpfRET | bpfK, bpfRET | bpfA, bpfMISC | bpfTAX, bpfMISC | bpfTXA:
		case bpfALU | bpfDIV | bpfK, bpfALU | bpfMOD | bpfK:
			if ins.K == 0 {
				return fmt.Errorf("instruction %d: division by zero", pc)
			}
		case bpfLD | bpfMEM, bpfLDX | bpfMEM, bpfST, bpfSTX:
			if ins.K >= memWords {
				return fmt.Errorf("instruction %d: scratch memory index %d out of range", pc, ins.K)
			}
		case bpfJMP | bpfJA:
			if uint64(ins.K) >= uint64(rest) {
				return fmt.Errorf("instruction %d: jump past the end", pc)
			}
		case bpfJMP | bpfJEQ | bpfK, bpfJMP | bpfJGT | bpfK, bpfJMP | bpfJGE | bpfK, bpfJMP | bpfJSET | bpfK,
			bpfJMP | bpfJEQ | bpfX, bpfJMP | bpfJGT | bpfX, bpfJMP | bpfJGE | bpfX, bpfJMP | bpfJSET | bpfX:
			if int(ins.Jt) >= rest || int(ins.Jf) >= rest {
				return fmt.Errorf("instruction %d: jump past the end", pc)
			}
		default:
			return fmt.Errorf("instruction %d: unknown opcode %#x", pc, op)
		}
	}
	if last := prog[len(prog)-1].Op; last != bpfRET|bpfK && last != bpfRET|bpfA {
		return fmt.Errorf("the last instruction is not a return")
	}
	return nil
}

// maxInstructions is the kernel's limit on a socket filter (BPF_MAXINSNS).
const maxInstructions = 4096
