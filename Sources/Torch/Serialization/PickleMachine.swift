// The pickle virtual machine behind `Unpickler`: executes the opcodes of protocols 0–5 into a flat
// node graph, checking every operand length against the remaining input and every global against
// the allow-list, so no byte sequence can crash the process (docs/formats.md §1.3–1.5).

/// The pickle VM. Objects live in a flat node array (no recursive teardown, cheap sharing); the
/// stack and memo hold node indices, so mutations (APPEND, SETITEM, BUILD) are seen through every
/// reference, as in Python.
struct PickleMachine {
    enum Kind: UInt8 {
        case leaf, tuple, list, dict, orderedDict, set, frozenSet, reduce, newObject, build, persistentID
    }

    struct Node {
        var kind: Kind
        var leaf: PickleValue
        var items: [Int]
    }

    let p: UnsafePointer<UInt8>
    let end: Int
    var pos: Int
    let config: Unpickler
    var nodes: [Node] = []
    var stack: [Int] = []
    var marks: [Int] = []
    var memo: [Int: Int] = [:]
    var opStart = 0
    var opName = ""

    init(p: UnsafePointer<UInt8>, end: Int, pos: Int, config: Unpickler) {
        self.p = p
        self.end = end
        self.pos = pos
        self.config = config
    }

    // MARK: errors

    func corrupt(_ reason: String) -> SerializationError {
        .corruptPickle(reason: reason, offset: opStart)
    }

    // MARK: input

    @inline(__always)
    func need(_ n: Int, _ what: @autoclosure () -> String) throws {
        guard n >= 0, end - pos >= n else {
            throw SerializationError.truncated(what: "pickle \(what())", offset: pos, needed: max(n, 0), available: end - pos)
        }
    }

    mutating func byte() throws -> UInt8 {
        try need(1, "\(opName) operand")
        defer { pos += 1 }
        return p[pos]
    }

    mutating func u16() throws -> Int {
        try need(2, "\(opName) operand")
        defer { pos += 2 }
        return Int(p[pos]) | Int(p[pos + 1]) << 8
    }

    mutating func u32() throws -> UInt32 {
        try need(4, "\(opName) operand")
        defer { pos += 4 }
        return UInt32(littleEndian: UnsafeRawPointer(p + pos).loadUnaligned(as: UInt32.self))
    }

    mutating func u64() throws -> UInt64 {
        try need(8, "\(opName) operand")
        defer { pos += 8 }
        return UInt64(littleEndian: UnsafeRawPointer(p + pos).loadUnaligned(as: UInt64.self))
    }

    /// A length operand, checked against the remaining input.
    mutating func length(_ n: UInt64) throws -> Int {
        guard n <= UInt64(end - pos) else {
            throw SerializationError.truncated(what: "pickle \(opName) payload", offset: pos,
                                               needed: n > UInt64(Int.max) ? Int.max : Int(n), available: end - pos)
        }
        return Int(n)
    }

    mutating func take(_ n: Int) -> UnsafeBufferPointer<UInt8> {
        defer { pos += n }
        return UnsafeBufferPointer(start: p + pos, count: n)
    }

    /// A text operand: the bytes up to (not including) the next newline, which is consumed.
    mutating func line() throws -> UnsafeBufferPointer<UInt8> {
        var i = pos
        while i < end && p[i] != 0x0A { i += 1 }
        guard i < end else {
            throw SerializationError.truncated(what: "pickle \(opName) line (no newline)", offset: pos,
                                               needed: i - pos + 1, available: end - pos)
        }
        let r = UnsafeBufferPointer(start: p + pos, count: i - pos)
        pos = i + 1
        return r
    }

    func utf8(_ b: UnsafeBufferPointer<UInt8>) throws -> String {
        let s = String(decoding: b, as: UTF8.self)
        guard s.utf8.count == b.count, s.utf8.elementsEqual(b) else {
            throw corrupt("\(opName) operand is not valid UTF-8")
        }
        return s
    }

    func latin1(_ b: UnsafeBufferPointer<UInt8>) -> String {
        var s = String.UnicodeScalarView()
        for c in b { s.append(Unicode.Scalar(c)) }
        return String(s)
    }

    func text(_ b: UnsafeBufferPointer<UInt8>) -> String { String(decoding: b, as: UTF8.self) }

    // MARK: nodes and stack

    mutating func newNode(_ kind: Kind, _ leaf: PickleValue = .none, _ items: [Int] = []) throws -> Int {
        guard nodes.count < config.limits.maxObjects else {
            throw SerializationError.pickleLimitExceeded(what: "objects created", limit: config.limits.maxObjects, offset: opStart)
        }
        nodes.append(Node(kind: kind, leaf: leaf, items: items))
        return nodes.count - 1
    }

    mutating func push(_ node: Int) throws {
        guard stack.count < config.limits.maxStackDepth else {
            throw SerializationError.pickleLimitExceeded(what: "stack depth", limit: config.limits.maxStackDepth, offset: opStart)
        }
        stack.append(node)
    }

    mutating func pushLeaf(_ v: PickleValue) throws { try push(try newNode(.leaf, v)) }

    var markBase: Int { marks.last ?? 0 }

    mutating func pop() throws -> Int {
        guard stack.count > markBase else { throw corrupt("\(opName) on an empty stack (stack underflow)") }
        return stack.removeLast()
    }

    func top() throws -> Int {
        guard stack.count > markBase else { throw corrupt("\(opName) on an empty stack (stack underflow)") }
        return stack[stack.count - 1]
    }

    mutating func popMark() throws -> [Int] {
        guard let m = marks.popLast() else { throw corrupt("\(opName) without a preceding MARK") }
        let items = Array(stack[m...])
        stack.removeSubrange(m...)
        return items
    }

    /// Follows BUILD wrappers to the object being built (so APPEND/SETITEM after BUILD still work).
    func target(_ i: Int) -> Int {
        var j = i
        while nodes[j].kind == .build { j = nodes[j].items[0] }
        return j
    }

    func kindName(_ i: Int) -> String {
        let n = nodes[i]
        switch n.kind {
        case .leaf:
            switch n.leaf {
            case .none: return "None"
            case .bool: return "bool"
            case .int, .bigInt: return "int"
            case .float: return "float"
            case .string: return "str"
            case .bytes: return "bytes"
            case let .global(m, nm): return "\(m).\(nm)"
            default: return "value"
            }
        case .tuple: return "tuple"
        case .list: return "list"
        case .dict: return "dict"
        case .orderedDict: return "OrderedDict"
        case .set: return "set"
        case .frozenSet: return "frozenset"
        case .reduce: return "call result"
        case .newObject: return "object"
        case .build: return "built object"
        case .persistentID: return "persistent object"
        }
    }

    mutating func memoPut(_ index: Int, _ node: Int) throws {
        if memo[index] == nil && memo.count >= config.limits.maxMemoEntries {
            throw SerializationError.pickleLimitExceeded(what: "memo entries", limit: config.limits.maxMemoEntries, offset: opStart)
        }
        memo[index] = node
    }

    mutating func memoGet(_ index: Int) throws -> Int {
        guard let n = memo[index] else { throw corrupt("memo key \(index) was never stored (\(opName))") }
        return n
    }

    mutating func global(_ module: String, _ name: String) throws -> PickleValue {
        let m = Unpickler.importMapping[module] ?? module
        let root = m.split(separator: ".", maxSplits: 1).first.map(String.init) ?? m
        if Unpickler.blockedModules.contains(m) || Unpickler.blockedModules.contains(root)
            || !config.allowedGlobals.contains("\(m).\(name)") {
            throw SerializationError.disallowedGlobal(module: m, name: name, offset: opStart)
        }
        return .global(module: m, name: name)
    }

    func requireGlobal(_ i: Int, _ role: String) throws {
        guard nodes[i].kind == .leaf, case .global = nodes[i].leaf else {
            throw corrupt("\(opName) \(role) must be an allow-listed global, got \(kindName(i))")
        }
    }

    func requireTuple(_ i: Int, _ role: String) throws {
        guard nodes[i].kind == .tuple else { throw corrupt("\(opName) \(role) must be a tuple, got \(kindName(i))") }
    }

    /// REDUCE / INST / OBJ: `collections.OrderedDict()` and `OrderedDict(pairs)` become an ordered
    /// dict right away (later SETITEMs fill it); every other call stays an unevaluated node.
    mutating func call(_ callable: Int, _ args: Int) throws -> Int {
        if case let .global(m, n) = nodes[callable].leaf, m == "collections", n == "OrderedDict" {
            let a = nodes[args].items
            if a.isEmpty { return try newNode(.orderedDict) }
            if a.count == 1, nodes[a[0]].kind == .list || nodes[a[0]].kind == .tuple {
                var flat: [Int] = []
                var ok = true
                for pair in nodes[a[0]].items {
                    let pn = nodes[pair]
                    guard pn.kind == .tuple || pn.kind == .list, pn.items.count == 2 else { ok = false; break }
                    flat.append(contentsOf: pn.items)
                }
                if ok { return try newNode(.orderedDict, .none, flat) }
            }
        }
        return try newNode(.reduce, .none, [callable, args])
    }

    mutating func decodeLegacyString(_ b: UnsafeBufferPointer<UInt8>) throws -> PickleValue {
        switch config.legacyStringDecoding {
        case .utf8: return .string(try utf8(b))
        case .latin1: return .string(latin1(b))
        case .bytes: return .bytes(Array(b))
        }
    }

    // MARK: text-operand parsers

    /// Python's `codecs.escape_decode` on the inside of a quoted STRING operand.
    func escapeDecode(_ b: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        var i = 0
        func hexVal(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        while i < b.count {
            let c = b[i]
            if c != 0x5C { out.append(c); i += 1; continue }
            i += 1
            guard i < b.count else { throw corrupt("STRING operand ends with a lone backslash") }
            let e = b[i]
            i += 1
            switch e {
            case 0x5C: out.append(0x5C)
            case 0x27: out.append(0x27)
            case 0x22: out.append(0x22)
            case 0x61: out.append(0x07)  // \a
            case 0x62: out.append(0x08)  // \b
            case 0x66: out.append(0x0C)  // \f
            case 0x6E: out.append(0x0A)  // \n
            case 0x72: out.append(0x0D)  // \r
            case 0x74: out.append(0x09)  // \t
            case 0x76: out.append(0x0B)  // \v
            case 0x30...0x37:
                var v = Int(e - 0x30)
                var k = 0
                while k < 2, i < b.count, (0x30...0x37).contains(b[i]) { v = v * 8 + Int(b[i] - 0x30); i += 1; k += 1 }
                out.append(UInt8(truncatingIfNeeded: v))
            case 0x78:
                guard i + 1 < b.count, let h = hexVal(b[i]), let l = hexVal(b[i + 1]) else {
                    throw corrupt("invalid \\x escape in STRING operand")
                }
                out.append(h << 4 | l)
                i += 2
            default:
                out.append(0x5C)
                out.append(e)
            }
        }
        return out
    }

    /// Python's `raw-unicode-escape` codec (the UNICODE operand).
    func rawUnicodeEscape(_ b: UnsafeBufferPointer<UInt8>) throws -> String {
        var out = String.UnicodeScalarView()
        var i = 0
        while i < b.count {
            let c = b[i]
            if c != 0x5C { out.append(Unicode.Scalar(c)); i += 1; continue }
            // A run of backslashes; \u / \U is an escape only after an odd number of them.
            var j = i
            while j < b.count && b[j] == 0x5C { j += 1 }
            let run = j - i
            let isEscape = run % 2 == 1 && j < b.count && (b[j] == 0x75 || b[j] == 0x55)
            let literal = isEscape ? run - 1 : run
            for _ in 0..<literal { out.append("\\") }
            i = j
            guard isEscape else { continue }
            let digits = b[i] == 0x75 ? 4 : 8
            i += 1
            guard b.count - i >= digits else { throw corrupt("truncated \\u escape in UNICODE operand") }
            var v: UInt32 = 0
            for k in 0..<digits {
                let h = b[i + k]
                let d: UInt32
                switch h {
                case 0x30...0x39: d = UInt32(h - 0x30)
                case 0x61...0x66: d = UInt32(h - 0x61 + 10)
                case 0x41...0x46: d = UInt32(h - 0x41 + 10)
                default: throw corrupt("invalid hex digit in \\u escape of UNICODE operand")
                }
                v = v << 4 | d
            }
            i += digits
            guard let scalar = Unicode.Scalar(v) else {
                throw corrupt("\\u escape U+\(String(v, radix: 16, uppercase: true)) is not a valid Unicode scalar (surrogates are not supported)")
            }
            out.append(scalar)
        }
        return String(out)
    }

    func parseIndex(_ b: UnsafeBufferPointer<UInt8>) throws -> Int {
        if !b.isEmpty, b.count <= 18, b.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return b.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        }
        guard let v = Int(text(b).trimmingWhitespace()), v >= 0 else {
            throw corrupt("\(opName) operand '\(text(b).prefix(40))' is not a non-negative integer")
        }
        return v
    }

    // MARK: main loop

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    mutating func run() throws -> Int {
        while true {
            opStart = pos
            guard pos < end else {
                throw SerializationError.truncated(what: "pickle opcode (stream ends without STOP)", offset: pos, needed: 1, available: 0)
            }
            let op = p[pos]
            pos += 1
            switch op {
            case 0x28:  // ( MARK
                opName = "MARK"
                guard marks.count < config.limits.maxStackDepth else {
                    throw SerializationError.pickleLimitExceeded(what: "MARK stack depth", limit: config.limits.maxStackDepth, offset: opStart)
                }
                marks.append(stack.count)
            case 0x2E:  // . STOP
                opName = "STOP"
                return try pop()
            case 0x30:  // 0 POP
                opName = "POP"
                if stack.count > markBase { stack.removeLast() } else { _ = try popMark() }
            case 0x31:  // 1 POP_MARK
                opName = "POP_MARK"
                _ = try popMark()
            case 0x32:  // 2 DUP
                opName = "DUP"
                try push(try top())
            case 0x46:  // F FLOAT
                opName = "FLOAT"
                let t = text(try line()).trimmingWhitespace()
                guard let d = Double(t) else { throw corrupt("FLOAT operand '\(t.prefix(40))' is not a number") }
                try pushLeaf(.float(d))
            case 0x49:  // I INT
                opName = "INT"
                let b = try line()
                let t = text(b)
                if t == "00" { try pushLeaf(.bool(false)) } else if t == "01" { try pushLeaf(.bool(true)) } else {
                    guard let v = PickleBigInt.parseDecimal(t[...]) else { throw corrupt("INT operand '\(t.prefix(40))' is not an integer") }
                    try pushLeaf(v)
                }
            case 0x4A:  // J BININT
                opName = "BININT"
                try pushLeaf(.int(Int64(Int32(bitPattern: try u32()))))
            case 0x4B:  // K BININT1
                opName = "BININT1"
                try pushLeaf(.int(Int64(try byte())))
            case 0x4C:  // L LONG
                opName = "LONG"
                var t = text(try line())
                if t.hasSuffix("L") { t.removeLast() }
                guard let v = PickleBigInt.parseDecimal(t[...]) else { throw corrupt("LONG operand '\(t.prefix(40))' is not an integer") }
                try pushLeaf(v)
            case 0x4D:  // M BININT2
                opName = "BININT2"
                try pushLeaf(.int(Int64(try u16())))
            case 0x4E:  // N NONE
                opName = "NONE"
                try pushLeaf(.none)
            case 0x50:  // P PERSID
                opName = "PERSID"
                let b = try line()
                guard b.allSatisfy({ $0 < 0x80 }) else { throw corrupt("PERSID operand is not ASCII") }
                let pid = try newNode(.leaf, .string(text(b)))
                try push(try newNode(.persistentID, .none, [pid]))
            case 0x51:  // Q BINPERSID
                opName = "BINPERSID"
                let pid = try pop()
                try push(try newNode(.persistentID, .none, [pid]))
            case 0x52:  // R REDUCE
                opName = "REDUCE"
                let args = try pop()
                let callable = try top()
                try requireGlobal(callable, "callable")
                try requireTuple(args, "arguments")
                stack[stack.count - 1] = try call(callable, args)
            case 0x53:  // S STRING
                opName = "STRING"
                let b = try line()
                guard b.count >= 2, b[0] == b[b.count - 1], b[0] == 0x22 || b[0] == 0x27 else {
                    throw corrupt("the STRING opcode argument must be quoted")
                }
                let inner = UnsafeBufferPointer(rebasing: b[1..<(b.count - 1)])
                let raw = try escapeDecode(inner)
                try raw.withUnsafeBufferPointer { try pushLeaf(try decodeLegacyString($0)) }
            case 0x54:  // T BINSTRING
                opName = "BINSTRING"
                let n = Int32(bitPattern: try u32())
                guard n >= 0 else { throw corrupt("BINSTRING has negative length \(n)") }
                let len = try length(UInt64(n))
                try pushLeaf(try decodeLegacyString(take(len)))
            case 0x55:  // U SHORT_BINSTRING
                opName = "SHORT_BINSTRING"
                let len = try length(UInt64(try byte()))
                try pushLeaf(try decodeLegacyString(take(len)))
            case 0x56:  // V UNICODE
                opName = "UNICODE"
                try pushLeaf(.string(try rawUnicodeEscape(try line())))
            case 0x58:  // X BINUNICODE
                opName = "BINUNICODE"
                let len = try length(UInt64(try u32()))
                try pushLeaf(.string(try utf8(take(len))))
            case 0x61:  // a APPEND
                opName = "APPEND"
                let v = try pop()
                let t = target(try top())
                guard nodes[t].kind == .list else { throw corrupt("APPEND target must be a list, got \(kindName(t))") }
                nodes[t].items.append(v)
            case 0x62:  // b BUILD
                opName = "BUILD"
                let state = try pop()
                let inst = try top()
                // Build in place so every reference (memo, containers) sees the built object.
                let moved = nodes[inst]
                let inner = try newNode(moved.kind, moved.leaf, moved.items)
                nodes[inst] = Node(kind: .build, leaf: .none, items: [inner, state])
            case 0x63:  // c GLOBAL
                opName = "GLOBAL"
                let module = try utf8(try line())
                let name = try utf8(try line())
                try pushLeaf(try global(module, name))
            case 0x64:  // d DICT
                opName = "DICT"
                let items = try popMark()
                guard items.count % 2 == 0 else { throw corrupt("DICT has an odd number of items (\(items.count))") }
                try push(try newNode(.dict, .none, items))
            case 0x7D:  // } EMPTY_DICT
                opName = "EMPTY_DICT"
                try push(try newNode(.dict))
            case 0x65:  // e APPENDS
                opName = "APPENDS"
                let items = try popMark()
                let t = target(try top())
                guard nodes[t].kind == .list else { throw corrupt("APPENDS target must be a list, got \(kindName(t))") }
                nodes[t].items.append(contentsOf: items)
            case 0x67:  // g GET
                opName = "GET"
                try push(try memoGet(try parseIndex(try line())))
            case 0x68:  // h BINGET
                opName = "BINGET"
                try push(try memoGet(Int(try byte())))
            case 0x69:  // i INST
                opName = "INST"
                let module = try utf8(try line())
                let name = try utf8(try line())
                let cls = try newNode(.leaf, try global(module, name))
                let args = try newNode(.tuple, .none, try popMark())
                try push(try call(cls, args))
            case 0x6A:  // j LONG_BINGET
                opName = "LONG_BINGET"
                try push(try memoGet(Int(try u32())))
            case 0x6C:  // l LIST
                opName = "LIST"
                try push(try newNode(.list, .none, try popMark()))
            case 0x5D:  // ] EMPTY_LIST
                opName = "EMPTY_LIST"
                try push(try newNode(.list))
            case 0x6F:  // o OBJ
                opName = "OBJ"
                let items = try popMark()
                guard let cls = items.first else { throw corrupt("OBJ without a class") }
                try requireGlobal(cls, "class")
                let args = try newNode(.tuple, .none, Array(items.dropFirst()))
                try push(try call(cls, args))
            case 0x70:  // p PUT
                opName = "PUT"
                let idx = try parseIndex(try line())
                try memoPut(idx, try top())
            case 0x71:  // q BINPUT
                opName = "BINPUT"
                let idx = Int(try byte())
                try memoPut(idx, try top())
            case 0x72:  // r LONG_BINPUT
                opName = "LONG_BINPUT"
                let idx = Int(try u32())
                try memoPut(idx, try top())
            case 0x73:  // s SETITEM
                opName = "SETITEM"
                let v = try pop()
                let k = try pop()
                let t = target(try top())
                guard nodes[t].kind == .dict || nodes[t].kind == .orderedDict else {
                    throw corrupt("SETITEM target must be a dict or OrderedDict, got \(kindName(t))")
                }
                nodes[t].items.append(k)
                nodes[t].items.append(v)
            case 0x74:  // t TUPLE
                opName = "TUPLE"
                try push(try newNode(.tuple, .none, try popMark()))
            case 0x29:  // ) EMPTY_TUPLE
                opName = "EMPTY_TUPLE"
                try push(try newNode(.tuple))
            case 0x75:  // u SETITEMS
                opName = "SETITEMS"
                let items = try popMark()
                guard items.count % 2 == 0 else { throw corrupt("SETITEMS has an odd number of items (\(items.count))") }
                let t = target(try top())
                guard nodes[t].kind == .dict || nodes[t].kind == .orderedDict else {
                    throw corrupt("SETITEMS target must be a dict or OrderedDict, got \(kindName(t))")
                }
                nodes[t].items.append(contentsOf: items)
            case 0x47:  // G BINFLOAT
                opName = "BINFLOAT"
                try need(8, "BINFLOAT operand")
                let bits = UInt64(bigEndian: UnsafeRawPointer(p + pos).loadUnaligned(as: UInt64.self))
                pos += 8
                try pushLeaf(.float(Double(bitPattern: bits)))
            case 0x42:  // B BINBYTES
                opName = "BINBYTES"
                let len = try length(UInt64(try u32()))
                try pushLeaf(.bytes(Array(take(len))))
            case 0x43:  // C SHORT_BINBYTES
                opName = "SHORT_BINBYTES"
                let len = try length(UInt64(try byte()))
                try pushLeaf(.bytes(Array(take(len))))
            case 0x80:  // PROTO
                opName = "PROTO"
                let v = try byte()
                guard v <= 5 else { throw corrupt("unsupported pickle protocol \(v)") }
            case 0x81:  // NEWOBJ
                opName = "NEWOBJ"
                let args = try pop()
                let cls = try pop()
                try requireGlobal(cls, "class")
                try requireTuple(args, "arguments")
                try push(try newNode(.newObject, .none, [cls, args]))
            case 0x85:  // TUPLE1
                opName = "TUPLE1"
                let a = try pop()
                try push(try newNode(.tuple, .none, [a]))
            case 0x86:  // TUPLE2
                opName = "TUPLE2"
                let b = try pop()
                let a = try pop()
                try push(try newNode(.tuple, .none, [a, b]))
            case 0x87:  // TUPLE3
                opName = "TUPLE3"
                let c = try pop()
                let b = try pop()
                let a = try pop()
                try push(try newNode(.tuple, .none, [a, b, c]))
            case 0x88:  // NEWTRUE
                opName = "NEWTRUE"
                try pushLeaf(.bool(true))
            case 0x89:  // NEWFALSE
                opName = "NEWFALSE"
                try pushLeaf(.bool(false))
            case 0x8A:  // LONG1
                opName = "LONG1"
                let len = try length(UInt64(try byte()))
                try pushLeaf(PickleBigInt.value(fromTwosComplement: Array(take(len))))
            case 0x8B:  // LONG4
                opName = "LONG4"
                let n = Int32(bitPattern: try u32())
                guard n >= 0 else { throw corrupt("LONG4 has negative byte count \(n)") }
                let len = try length(UInt64(n))
                try pushLeaf(PickleBigInt.value(fromTwosComplement: Array(take(len))))
            case 0x8C:  // SHORT_BINUNICODE
                opName = "SHORT_BINUNICODE"
                let len = try length(UInt64(try byte()))
                try pushLeaf(.string(try utf8(take(len))))
            case 0x8D:  // BINUNICODE8
                opName = "BINUNICODE8"
                let len = try length(try u64())
                try pushLeaf(.string(try utf8(take(len))))
            case 0x8E:  // BINBYTES8
                opName = "BINBYTES8"
                let len = try length(try u64())
                try pushLeaf(.bytes(Array(take(len))))
            case 0x96:  // BYTEARRAY8
                opName = "BYTEARRAY8"
                let len = try length(try u64())
                try pushLeaf(.bytes(Array(take(len))))
            case 0x8F:  // EMPTY_SET
                opName = "EMPTY_SET"
                try push(try newNode(.set))
            case 0x90:  // ADDITEMS
                opName = "ADDITEMS"
                let items = try popMark()
                let t = target(try top())
                guard nodes[t].kind == .set else { throw corrupt("ADDITEMS target must be a set, got \(kindName(t))") }
                nodes[t].items.append(contentsOf: items)
            case 0x91:  // FROZENSET
                opName = "FROZENSET"
                try push(try newNode(.frozenSet, .none, try popMark()))
            case 0x92:  // NEWOBJ_EX
                opName = "NEWOBJ_EX"
                let kwargs = try pop()
                let args = try pop()
                let cls = try pop()
                try requireGlobal(cls, "class")
                try requireTuple(args, "arguments")
                guard nodes[kwargs].kind == .dict, nodes[kwargs].items.isEmpty else {
                    throw corrupt("NEWOBJ_EX with keyword arguments is not supported")
                }
                try push(try newNode(.newObject, .none, [cls, args]))
            case 0x93:  // STACK_GLOBAL
                opName = "STACK_GLOBAL"
                let nameNode = try pop()
                let moduleNode = try pop()
                guard nodes[moduleNode].kind == .leaf, case let .string(module) = nodes[moduleNode].leaf,
                      nodes[nameNode].kind == .leaf, case let .string(name) = nodes[nameNode].leaf else {
                    throw corrupt("STACK_GLOBAL needs two strings on the stack")
                }
                try pushLeaf(try global(module, name))
            case 0x94:  // MEMOIZE
                opName = "MEMOIZE"
                try memoPut(memo.count, try top())
            case 0x95:  // FRAME
                opName = "FRAME"
                _ = try length(try u64())  // frames only group opcodes; the length must fit the input
            default:
                // 0x82-0x84 EXT1/2/4 (extension registry), 0x97/0x98 out-of-band buffers, unknown bytes.
                throw SerializationError.unsupportedPickleOpcode(opcode: op, offset: opStart)
            }
        }
    }
}
