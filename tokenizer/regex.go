package tokenizer

import (
	"errors"
	"fmt"
	"math"
)

// This file is a small backtracking regex engine with the semantics of
// libstdc++'s std::regex in its ECMAScript grammar — what llama.cpp's
// unicode_regex_split_stl runs for the pre-tokenizer regexes that have no
// hand-written fast path (unicode.cpp L739-773). Go's regexp (RE2) has
// neither lookahead nor ECMAScript's "first alternative wins" order, so it
// cannot be used. Only the constructs llama.cpp's regex sets use are
// supported: alternation, (?:…) and (…) groups, (?=…) and (?!…), greedy and
// lazy quantifiers (* + ? {n} {n,} {n,m}), bracket classes, . ^ $ \b \B and
// the escapes \d \D \s \S \w \W \t \n \v \f \r \0 \xHH \uHHHH.
//
// Character classes follow libstdc++ with the "C" locale that llama.cpp runs
// in: \s, \d and \w are ASCII-only (isspace, isdigit, isalnum + '_'), both
// for the byte ("collapsed") and for the wchar_t (codepoint) variant.

// errRegex reports a pattern this engine cannot compile.
var errRegex = errors.New("tokenizer: unsupported regex")

// Predefined class bits of a charSet.
const (
	classDigit uint8 = 1 << iota
	classNotDigit
	classSpace
	classNotSpace
	classWord
	classNotWord
)

// charSet is a bracket expression, an escape class or a single character.
type charSet struct {
	neg     bool
	ranges  [][2]uint32
	classes uint8
	and     *charSet // set by simplify: a lookahead class intersected with this one
	low     [4]uint64
}

func isSpaceC(c uint32) bool { return c == ' ' || c >= '\t' && c <= '\r' }
func isDigitC(c uint32) bool { return c >= '0' && c <= '9' }
func isWordC(c uint32) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigitC(c) || c == '_'
}

func (s *charSet) slowMatch(c uint32) bool {
	m := false
	for _, r := range s.ranges {
		if r[0] <= c && c <= r[1] {
			m = true
			break
		}
	}
	if !m && s.classes != 0 {
		m = s.classes&classDigit != 0 && isDigitC(c) ||
			s.classes&classNotDigit != 0 && !isDigitC(c) ||
			s.classes&classSpace != 0 && isSpaceC(c) ||
			s.classes&classNotSpace != 0 && !isSpaceC(c) ||
			s.classes&classWord != 0 && isWordC(c) ||
			s.classes&classNotWord != 0 && !isWordC(c)
	}
	if m == s.neg {
		return false
	}
	return s.and == nil || s.and.match(c)
}

// finish precomputes the bitmap of the first 256 values.
func (s *charSet) finish() *charSet {
	if s.and != nil {
		s.and.finish()
	}
	for c := uint32(0); c < 256; c++ {
		if s.slowMatch(c) {
			s.low[c>>6] |= 1 << (c & 63)
		}
	}
	return s
}

func (s *charSet) match(c uint32) bool {
	if c < 256 {
		return s.low[c>>6]&(1<<(c&63)) != 0
	}
	return s.slowMatch(c)
}

// Regex AST.
type nodeKind uint8

const (
	nEmpty nodeKind = iota
	nSet
	nConcat
	nAlt
	nRepeat
	nLook
	nBegin
	nEnd
	nWordB
)

type node struct {
	kind     nodeKind
	set      *charSet
	subs     []*node
	min, max int // nRepeat; max < 0 = unbounded
	greedy   bool
	neg      bool // nLook, nWordB
}

type parser struct {
	p   []uint32
	i   int
	err error
}

func (ps *parser) fail(format string, args ...any) {
	if ps.err == nil {
		ps.err = fmt.Errorf("%w: %s at %d", errRegex, fmt.Sprintf(format, args...), ps.i)
	}
}

func (ps *parser) more() bool { return ps.i < len(ps.p) && ps.err == nil }
func (ps *parser) peek() uint32 {
	if ps.i < len(ps.p) {
		return ps.p[ps.i]
	}
	return math.MaxUint32
}

func (ps *parser) alternation() *node {
	alts := []*node{ps.concat()}
	for ps.more() && ps.peek() == '|' {
		ps.i++
		alts = append(alts, ps.concat())
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return &node{kind: nAlt, subs: alts}
}

func (ps *parser) concat() *node {
	var items []*node
	for ps.more() && ps.peek() != '|' && ps.peek() != ')' {
		items = append(items, ps.repeat())
	}
	return &node{kind: nConcat, subs: items}
}

func (ps *parser) repeat() *node {
	atom := ps.atom()
	for ps.more() {
		min, max := 0, 0
		switch ps.peek() {
		case '*':
			min, max = 0, -1
			ps.i++
		case '+':
			min, max = 1, -1
			ps.i++
		case '?':
			min, max = 0, 1
			ps.i++
		case '{':
			ps.i++
			min = ps.number()
			max = min
			if ps.peek() == ',' {
				ps.i++
				max = -1
				if ps.peek() != '}' {
					max = ps.number()
				}
			}
			if ps.peek() != '}' || max >= 0 && max < min {
				ps.fail("bad {n,m}")
				return atom
			}
			ps.i++
		default:
			return atom
		}
		if atom.kind == nBegin || atom.kind == nEnd || atom.kind == nWordB || atom.kind == nLook {
			ps.fail("quantified assertion")
		}
		greedy := true
		if ps.peek() == '?' {
			greedy = false
			ps.i++
		}
		atom = &node{kind: nRepeat, subs: []*node{atom}, min: min, max: max, greedy: greedy}
	}
	return atom
}

func (ps *parser) number() int {
	n, digits := 0, 0
	for ps.i < len(ps.p) && isDigitC(ps.p[ps.i]) && n < 1<<20 {
		n = n*10 + int(ps.p[ps.i]-'0')
		ps.i++
		digits++
	}
	if digits == 0 || n >= 1<<20 {
		ps.fail("bad count")
	}
	return n
}

func single(c uint32) *charSet { return &charSet{ranges: [][2]uint32{{c, c}}} }

func (ps *parser) atom() *node {
	c := ps.p[ps.i]
	ps.i++
	switch c {
	case '(':
		kind, neg := nConcat, false
		if ps.peek() == '?' {
			ps.i++
			switch ps.peek() {
			case ':':
			case '=':
				kind = nLook
			case '!':
				kind, neg = nLook, true
			default:
				ps.fail("unsupported group")
				return &node{}
			}
			ps.i++
		}
		inner := ps.alternation()
		if ps.peek() != ')' {
			ps.fail("missing )")
			return &node{}
		}
		ps.i++
		if kind == nLook {
			return &node{kind: nLook, subs: []*node{inner}, neg: neg}
		}
		return inner
	case ')', '*', '+', '?', '{', '}', ']':
		ps.fail("unexpected %q", rune(c))
		return &node{}
	case '[':
		return &node{kind: nSet, set: ps.bracket()}
	case '.':
		// ECMAScript: anything but a line terminator.
		return &node{kind: nSet, set: &charSet{neg: true, ranges: [][2]uint32{{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}}}
	case '^':
		return &node{kind: nBegin}
	case '$':
		return &node{kind: nEnd}
	case '\\':
		if ps.i >= len(ps.p) {
			ps.fail("trailing backslash")
			return &node{}
		}
		switch ps.p[ps.i] {
		case 'b':
			ps.i++
			return &node{kind: nWordB}
		case 'B':
			ps.i++
			return &node{kind: nWordB, neg: true}
		}
		s, _ := ps.escape(false)
		return &node{kind: nSet, set: s}
	}
	return &node{kind: nSet, set: single(c)}
}

// escape parses the escape after a backslash; isChar reports a single
// character (usable as a range end) rather than a class.
func (ps *parser) escape(inBracket bool) (*charSet, bool) {
	c := ps.p[ps.i]
	ps.i++
	switch c {
	case 'd':
		return &charSet{classes: classDigit}, false
	case 'D':
		return &charSet{classes: classNotDigit}, false
	case 's':
		return &charSet{classes: classSpace}, false
	case 'S':
		return &charSet{classes: classNotSpace}, false
	case 'w':
		return &charSet{classes: classWord}, false
	case 'W':
		return &charSet{classes: classNotWord}, false
	case 't':
		return single('\t'), true
	case 'n':
		return single('\n'), true
	case 'v':
		return single('\v'), true
	case 'f':
		return single('\f'), true
	case 'r':
		return single('\r'), true
	case '0':
		return single(0), true
	case 'b':
		if inBracket {
			return single('\b'), true
		}
	case 'x', 'u':
		n := 2
		if c == 'u' {
			n = 4
		}
		var v uint32
		for k := 0; k < n; k++ {
			if ps.i >= len(ps.p) {
				ps.fail("short hex escape")
				return single(0), true
			}
			h := ps.p[ps.i]
			ps.i++
			switch {
			case h >= '0' && h <= '9':
				v = v<<4 | (h - '0')
			case h >= 'a' && h <= 'f':
				v = v<<4 | (h - 'a' + 10)
			case h >= 'A' && h <= 'F':
				v = v<<4 | (h - 'A' + 10)
			default:
				ps.fail("bad hex escape")
			}
		}
		return single(v), true
	}
	if c >= '1' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
		ps.fail("unsupported escape \\%c", rune(c))
	}
	return single(c), true // identity escape: \\ \[ \$ \- …
}

func (ps *parser) bracket() *charSet {
	s := &charSet{}
	if ps.peek() == '^' {
		s.neg = true
		ps.i++
	}
	for {
		if ps.i >= len(ps.p) {
			ps.fail("missing ]")
			return s
		}
		c := ps.p[ps.i]
		if c == ']' {
			ps.i++
			return s
		}
		ps.i++
		lo, isChar := c, true
		if c == '\\' {
			if ps.i >= len(ps.p) {
				ps.fail("trailing backslash")
				return s
			}
			var e *charSet
			e, isChar = ps.escape(true)
			if !isChar {
				s.classes |= e.classes
				continue
			}
			lo = e.ranges[0][0]
		}
		// A '-' that is not the last character of the bracket makes a range.
		if ps.peek() == '-' && ps.i+1 < len(ps.p) && ps.p[ps.i+1] != ']' {
			ps.i++
			hi := ps.p[ps.i]
			ps.i++
			if hi == '\\' {
				if ps.i >= len(ps.p) {
					ps.fail("trailing backslash")
					return s
				}
				e, ok := ps.escape(true)
				if !ok {
					ps.fail("class as range end")
					return s
				}
				hi = e.ranges[0][0]
			}
			if hi < lo {
				ps.fail("range out of order")
				return s
			}
			s.ranges = append(s.ranges, [2]uint32{lo, hi})
			continue
		}
		s.ranges = append(s.ranges, [2]uint32{lo, lo})
	}
}

// simplify folds a single-class lookahead followed by a class — the
// ((?=[\p{L}])([^a-z])) idiom of the gpt-4o and tekken sets — into one
// intersected class, so repeats of it run as plain character loops. The
// two forms match exactly the same character.
func simplify(n *node) *node {
	for i, s := range n.subs {
		n.subs[i] = simplify(s)
	}
	if n.kind == nConcat {
		out := n.subs[:0]
		for i := 0; i < len(n.subs); i++ {
			s := n.subs[i]
			if s.kind == nLook && i+1 < len(n.subs) && n.subs[i+1].kind == nSet && n.subs[i+1].set.and == nil {
				if body := singleSet(s.subs[0]); body != nil && body.and == nil {
					look := *body
					if s.neg {
						look.neg = !look.neg
					}
					next := *n.subs[i+1].set
					next.and = &look
					out = append(out, &node{kind: nSet, set: &next})
					i++
					continue
				}
			}
			out = append(out, s)
		}
		n.subs = out
		if len(n.subs) == 1 {
			return n.subs[0]
		}
	}
	return n
}

// singleSet returns the class a node matches if it matches exactly one
// character.
func singleSet(n *node) *charSet {
	for n.kind == nConcat && len(n.subs) == 1 {
		n = n.subs[0]
	}
	if n.kind == nSet {
		return n.set
	}
	return nil
}

func canBeEmpty(n *node) bool {
	switch n.kind {
	case nSet:
		return false
	case nConcat:
		for _, s := range n.subs {
			if !canBeEmpty(s) {
				return false
			}
		}
		return true
	case nAlt:
		for _, s := range n.subs {
			if canBeEmpty(s) {
				return true
			}
		}
		return false
	case nRepeat:
		return n.min == 0 || canBeEmpty(n.subs[0])
	}
	return true
}

// Program.
type opcode uint8

const (
	opMatch opcode = iota
	opSet
	opRepeatSet // set repeated min..max (y<0: unbounded), greedy or lazy
	opSplit     // try x first, then y
	opJmp
	opLook
	opBegin
	opEnd
	opWordB
)

type inst struct {
	op     opcode
	x, y   int
	min    int
	greedy bool
	neg    bool
	set    *charSet
	sub    *program
}

type program struct{ insts []inst }

// ecmaRegex is one compiled pre-tokenizer regex.
type ecmaRegex struct {
	prog *program
}

// compileECMA compiles a pattern given as code units (bytes for the
// collapsed form, codepoints for the wide one).
func compileECMA(pattern []uint32) (*ecmaRegex, error) {
	ps := &parser{p: pattern}
	n := ps.alternation()
	if ps.err == nil && ps.i != len(ps.p) {
		ps.fail("unbalanced )")
	}
	if ps.err != nil {
		return nil, ps.err
	}
	p, err := compileNode(simplify(n))
	if err != nil {
		return nil, err
	}
	return &ecmaRegex{prog: p}, nil
}

func compileNode(n *node) (*program, error) {
	p := &program{}
	if err := p.emit(n); err != nil {
		return nil, err
	}
	p.insts = append(p.insts, inst{op: opMatch})
	return p, nil
}

func (p *program) add(in inst) int {
	p.insts = append(p.insts, in)
	return len(p.insts) - 1
}

func (p *program) emit(n *node) error {
	switch n.kind {
	case nEmpty:
	case nSet:
		p.add(inst{op: opSet, set: n.set.finish()})
	case nConcat:
		for _, s := range n.subs {
			if err := p.emit(s); err != nil {
				return err
			}
		}
	case nAlt:
		var jumps []int
		for i, s := range n.subs {
			split := -1
			if i+1 < len(n.subs) {
				split = p.add(inst{op: opSplit})
				p.insts[split].x = split + 1
			}
			if err := p.emit(s); err != nil {
				return err
			}
			if split >= 0 {
				jumps = append(jumps, p.add(inst{op: opJmp}))
				p.insts[split].y = len(p.insts)
			}
		}
		for _, j := range jumps {
			p.insts[j].x = len(p.insts)
		}
	case nRepeat:
		body := n.subs[0]
		if s := singleSet(body); s != nil {
			p.add(inst{op: opRepeatSet, set: s.finish(), min: n.min, y: n.max, greedy: n.greedy})
			return nil
		}
		if canBeEmpty(body) {
			return fmt.Errorf("%w: repeat of a possibly empty expression", errRegex)
		}
		if n.min > 1024 || n.max > 1024 {
			return fmt.Errorf("%w: repeat count too large", errRegex)
		}
		for k := 0; k < n.min; k++ {
			if err := p.emit(body); err != nil {
				return err
			}
		}
		if n.max < 0 {
			loop := p.add(inst{op: opSplit})
			if err := p.emit(body); err != nil {
				return err
			}
			p.add(inst{op: opJmp, x: loop})
			p.setSplit(loop, loop+1, len(p.insts), n.greedy)
			return nil
		}
		var splits []int
		for k := n.min; k < n.max; k++ {
			splits = append(splits, p.add(inst{op: opSplit}))
			if err := p.emit(body); err != nil {
				return err
			}
		}
		for _, s := range splits {
			p.setSplit(s, s+1, len(p.insts), n.greedy)
		}
	case nLook:
		sub, err := compileNode(n.subs[0])
		if err != nil {
			return err
		}
		p.add(inst{op: opLook, neg: n.neg, sub: sub})
	case nBegin:
		p.add(inst{op: opBegin})
	case nEnd:
		p.add(inst{op: opEnd})
	case nWordB:
		p.add(inst{op: opWordB, neg: n.neg})
	}
	return nil
}

func (p *program) setSplit(at, body, exit int, greedy bool) {
	if greedy {
		p.insts[at].x, p.insts[at].y = body, exit
	} else {
		p.insts[at].x, p.insts[at].y = exit, body
	}
}

// matchEnv is the search range and flags of one regex_search call.
type matchEnv struct {
	text       []uint32
	begin, end int
	notNull    bool // match_not_null
	prevAvail  bool // match_prev_avail
}

// frame is a backtracking choice point; count ≥ 0 marks an opRepeatSet
// frame holding the repeat count last tried.
type frame struct {
	pc, pos, count int
}

// ErrRegexBudget reports a pre-tokenizer regex that backtracked more than
// the work budget of its input allows; it is also an ErrTokenize.
var ErrRegexBudget = fmt.Errorf("%w: pre-tokenizer regex exceeds its work budget", ErrTokenize)

// The work budget of one split: regexBaseSteps plus regexStepsPerCpt for
// each codepoint, counted in executed instructions, characters scanned by
// a repeat and backtracking steps. Every regex set llama.cpp has runs in a
// few dozen steps per codepoint on real text; a budget linear in the input
// bounds the quadratic cases a backtracking engine has, such as
// deepseek-llm's \s+$ on a long run of spaces before a digit: there
// libstdc++'s std::regex, which llama.cpp uses, needs 6 s for 10 000 spaces
// and 30 s for 20 000, and overflows an 8 MiB stack on 30 000; the budget
// lets about 26 000 through (a few seconds here) and refuses longer runs.
const (
	regexBaseSteps   = 1 << 30
	regexStepsPerCpt = 256
)

// matcher holds a reusable backtracking stack and the work budget left.
type matcher struct {
	stack  []frame
	budget int
}

// spend takes n steps from the budget and reports whether it still holds.
func (m *matcher) spend(n int) bool {
	m.budget -= n
	return m.budget >= 0
}

// run tries p anchored at start and returns the end of the first match in
// ECMAScript priority order; it gives up (no match) once the budget is
// spent, which its caller must check.
func (m *matcher) run(p *program, env *matchEnv, start int) (int, bool) {
	base := len(m.stack)
	defer func() { m.stack = m.stack[:base] }()
	pc, pos := 0, start
	for {
		if !m.spend(1) {
			return 0, false
		}
		in := &p.insts[pc]
		ok := true
		switch in.op {
		case opMatch:
			if !(env.notNull && pos == start) {
				return pos, true
			}
			ok = false
		case opSet:
			if pos < env.end && in.set.match(env.text[pos]) {
				pos++
				pc++
			} else {
				ok = false
			}
		case opRepeatSet:
			limit := env.end - pos
			if in.y >= 0 && in.y < limit {
				limit = in.y
			}
			if in.greedy {
				n := 0
				for n < limit && in.set.match(env.text[pos+n]) {
					n++
				}
				if !m.spend(n) {
					return 0, false
				}
				if n < in.min {
					ok = false
					break
				}
				if n > in.min {
					m.stack = append(m.stack, frame{pc: pc, pos: pos, count: n})
				}
				pos += n
				pc++
			} else {
				n := 0
				for n < in.min && n < limit && in.set.match(env.text[pos+n]) {
					n++
				}
				if n < in.min {
					ok = false
					break
				}
				if n < limit {
					m.stack = append(m.stack, frame{pc: pc, pos: pos, count: n})
				}
				pos += n
				pc++
			}
		case opSplit:
			m.stack = append(m.stack, frame{pc: in.y, pos: pos, count: -1})
			pc = in.x
		case opJmp:
			pc = in.x
		case opLook:
			sub := matchEnv{text: env.text, begin: env.begin, end: env.end, prevAvail: env.prevAvail}
			_, found := m.run(in.sub, &sub, pos)
			if found != in.neg {
				pc++
			} else {
				ok = false
			}
		case opBegin:
			if pos == env.begin && !env.prevAvail {
				pc++
			} else {
				ok = false
			}
		case opEnd:
			if pos == env.end {
				pc++
			} else {
				ok = false
			}
		case opWordB:
			left := (pos > env.begin || env.prevAvail) && pos > 0 && isWordC(env.text[pos-1])
			right := pos < env.end && isWordC(env.text[pos])
			if (left != right) != in.neg {
				pc++
			} else {
				ok = false
			}
		}
		if ok {
			continue
		}
		// Backtrack.
		for {
			if len(m.stack) == base || !m.spend(1) {
				return 0, false
			}
			f := &m.stack[len(m.stack)-1]
			if f.count < 0 {
				pc, pos = f.pc, f.pos
				m.stack = m.stack[:len(m.stack)-1]
				break
			}
			rin := &p.insts[f.pc]
			if rin.greedy {
				f.count--
				pc, pos = f.pc+1, f.pos+f.count
				if f.count <= rin.min {
					m.stack = m.stack[:len(m.stack)-1]
				}
				break
			}
			// Lazy: one more repetition, if the next character allows it.
			next := f.pos + f.count
			if next >= env.end || !rin.set.match(env.text[next]) {
				m.stack = m.stack[:len(m.stack)-1]
				continue
			}
			f.count++
			pc, pos = f.pc+1, f.pos+f.count
			if rin.y >= 0 && f.count >= rin.y || f.pos+f.count >= env.end {
				m.stack = m.stack[:len(m.stack)-1]
			}
			break
		}
	}
}

// search is regex_search over [env.begin, env.end) starting at from; with
// continuous (match_continuous) only from is tried.
func (m *matcher) search(re *ecmaRegex, env *matchEnv, from int, continuous bool) (start, end int, ok bool) {
	for s := from; s <= env.end && m.budget >= 0; s++ {
		if e, found := m.run(re.prog, env, s); found {
			return s, e, true
		}
		if continuous {
			break
		}
	}
	return 0, 0, false
}

// split is unicode_regex_split_stl: for each span of offsets it walks the
// matches as std::regex_iterator does (including its handling of empty
// matches) and emits the gaps and the matches as new spans. It fails with
// ErrRegexBudget when the matching work exceeds budget steps.
func (re *ecmaRegex) split(text []uint32, offsets []int, budget int) ([]int, error) {
	out := make([]int, 0, len(offsets))
	m := matcher{budget: budget}
	start := 0
	for _, off := range offsets {
		env := matchEnv{text: text, begin: start, end: start + off}
		startIdx := 0
		s, e, ok := m.search(re, &env, start, false)
		for ok {
			if pos := s - start; pos > startIdx {
				out = append(out, pos-startIdx)
			}
			out = append(out, e-s)
			startIdx = e - start
			// regex_iterator::operator++
			from := e
			if s == e {
				if e == env.end {
					break
				}
				env2 := env
				env2.begin, env2.notNull = e, true
				if s2, e2, ok2 := m.search(re, &env2, e, true); ok2 {
					s, e = s2, e2
					continue
				}
				from = e + 1
			}
			env.prevAvail = true
			env2 := env
			env2.begin = from
			s, e, ok = m.search(re, &env2, from, false)
		}
		if m.budget < 0 {
			return nil, ErrRegexBudget
		}
		if startIdx < off {
			out = append(out, off-startIdx)
		}
		start += off
	}
	return out, nil
}
