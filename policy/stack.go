package policy

// A decision's evaluation recurses deeply: OPA's evaluator calls itself
// for each expression, term and rule it enters, and the analysis's
// walkers for each node, so a decision needs tens of kilobytes of stack.
// A goroutine starts with a few and grows by doubling when a call does
// not fit, copying its stack and adjusting every frame on it, and each of
// those growths happened deep in the evaluation, with hundreds of frames
// to adjust. The gateway decides on new goroutines (the go-sdk runs each
// request's handler on one), and the collector halves an idle
// goroutine's stack, so most decisions paid for that.
//
// growStack makes room first, while the stack is shallow: a call with a
// frame of stackReserve bytes grows a smaller stack in one step, a copy
// of a few frames, and costs a stack that is already large enough only
// the clearing of the frame. BenchmarkDecideNewGoroutine measures both
// ways side by side on new goroutines.

// stackReserve is the frame growStack asks for: a stack with room for it
// holds the decisions of the benchmark's corpus, most of them without
// growing again.
const stackReserve = 32 << 10

// growStack grows the calling goroutine's stack to hold stackReserve
// bytes more than it holds now, if it does not.
//
//go:noinline
func growStack() byte {
	var frame [stackReserve]byte
	return lastByte(&frame)
}

// lastByte reads frame, so that the compiler keeps it on the stack.
//
//go:noinline
func lastByte(frame *[stackReserve]byte) byte { return frame[len(frame)-1] }
