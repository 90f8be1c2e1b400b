/// Module containers: `nn.Sequential`, `nn.ModuleList`, `nn.ModuleDict`.

extension nn {
    /// Modules applied one after another (PyTorch's `nn.Sequential`). Children are named by
    /// position (`0`, `1`, ...) or, when built from (name, module) pairs, by those names.
    ///
    /// ```swift
    /// let model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    /// let named = nn.Sequential(["fc1": nn.Linear(2, 8), "act": nn.ReLU()])   // like an OrderedDict
    /// let y = model(x)
    /// print(model[0], model[-1])
    /// ```
    open class Sequential: Module, Sequence {
        /// An empty Sequential.
        public override init() { super.init() }

        /// The given modules, named `0`, `1`, ...
        public convenience init(_ modules: Module...) { self.init(modules) }

        /// The given modules, named `0`, `1`, ...
        public init(_ modules: [Module]) {
            super.init()
            for (i, m) in modules.enumerated() { registeredModules[String(i)] = m }
        }

        /// Named modules in the literal's order (PyTorch's `Sequential(OrderedDict(...))`).
        public convenience init(_ pairs: KeyValuePairs<String, Module>) {
            self.init(pairs.map { ($0.key, $0.value) })
        }

        /// Named modules in order.
        public init(_ pairs: [(String, Module)]) {
            super.init()
            for (k, m) in pairs { addModule(k, m) }
        }

        /// Named modules from an ordered dictionary.
        @_disfavoredOverload
        public convenience init(_ dict: OrderedDict<Module>) { self.init(dict.items.map { ($0.key, $0.value) }) }

        /// Number of modules.
        public var count: Int { registeredModules.count }

        public func makeIterator() -> IndexingIterator<[Module]> { registeredModules.values.makeIterator() }

        /// The module at position `index` (negative counts from the end).
        public subscript(index: Int) -> Module {
            get { registeredModules.values[containerIndex(index, count, typeName)] }
            set {
                let i = containerIndex(index, count, typeName)
                registeredModules[registeredModules.keys[i]] = newValue
            }
        }

        /// A Sequential of the modules in `range`, keeping their names (PyTorch's `seq[1:3]`).
        public subscript(range: Range<Int>) -> Sequential {
            let items = registeredModules.items
            return Sequential(range.map { (items[$0].key, items[$0].value) })
        }

        /// Appends `module` named by its position; returns self.
        @discardableResult
        public func append(_ module: Module) -> Self {
            registeredModules[String(count)] = module
            return self
        }

        /// Appends each module; returns self.
        @discardableResult
        public func extend(_ modules: [Module]) -> Self {
            for m in modules { append(m) }
            return self
        }

        /// Inserts `module` before position `index`; modules are renumbered.
        @discardableResult
        public func insert(_ index: Int, _ module: Module) -> Self {
            var mods = registeredModules.values
            let n = mods.count
            precondition(index >= -n && index <= n, "Index out of range: \(index)")
            mods.insert(module, at: index < 0 ? index + n : index)
            setModules(mods)
            return self
        }

        /// Removes and returns the module at `index`; the rest are renumbered.
        @discardableResult
        public func remove(at index: Int) -> Module {
            var mods = registeredModules.values
            let m = mods.remove(at: containerIndex(index, count, typeName))
            setModules(mods)
            return m
        }

        /// The run of modules that follows a convolution at `from`: an optional batch norm, clamp and max pooling, and
        /// the index after the clamp.
        private func convRun(_ mods: [Module], from i: Int) -> (bn: Module?, clamp: Module?, pool: Module?, afterClamp: Int) {
            var j = i + 1
            func take(_ matches: (Module) -> Bool) -> Module? {
                guard j < mods.count, matches(mods[j]) else { return nil }
                j += 1
                return mods[j - 1]
            }
            let bn = take { $0 is BatchNormBase }
            let clamp = take { nn.clampBounds($0) != nil }
            let afterClamp = j
            return (bn, clamp, take { $0 is MaxPoolNd }, afterClamp)
        }

        /// Feeds `x` through each module in order. A Conv → BatchNorm (→ ReLU/ReLU6/Hardtanh) (→ MaxPool) run in eval
        /// mode is one convolution with the batch norm folded in and one pooling that applies the clamp to its output
        /// rows, where that is exact to rounding (`nn.convBatchNorm`); so is Conv (→ clamp) → MaxPool in inference.
        open override func forward(_ x: Tensor) -> Tensor {
            let mods = Array(registeredModules.values)
            var y = x
            var i = 0
            while i < mods.count {
                if mods[i] is ConvNd {
                    let run = convRun(mods, from: i)
                    if run.pool != nil, let fused = nn.fusedConvBlock(mods[i], run.bn, then: run.clamp, pool: run.pool, y) {
                        y = fused
                        i = run.afterClamp + 1
                        continue
                    }
                    if let bn = run.bn, let fused = nn.fusedConvBlock(mods[i], bn, then: run.clamp, y) {
                        y = fused
                        i = run.afterClamp
                        continue
                    }
                }
                y = mods[i](y)
                i += 1
            }
            return y
        }
    }

    /// A list of modules whose parameters are registered (PyTorch's `nn.ModuleList`); it has no
    /// `forward`. A stored property of type `[nn.Module]` is exposed as one of these.
    ///
    /// ```swift
    /// let layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
    /// for layer in layers { x = layer(x) }
    /// ```
    open class ModuleList: Module, Sequence {
        /// A list of `modules`, named `0`, `1`, ...
        public init(_ modules: [Module] = []) {
            super.init()
            setModules(modules)
        }

        /// Number of modules.
        public var count: Int { registeredModules.count }

        public func makeIterator() -> IndexingIterator<[Module]> { registeredModules.values.makeIterator() }

        /// The module at `index` (negative counts from the end).
        public subscript(index: Int) -> Module {
            get { registeredModules.values[containerIndex(index, count, typeName)] }
            set { registeredModules[String(containerIndex(index, count, typeName))] = newValue }
        }

        /// A ModuleList of the modules in `range`.
        public subscript(range: Range<Int>) -> ModuleList {
            ModuleList(Array(registeredModules.values[range]))
        }

        /// Appends `module`; returns self.
        @discardableResult
        public func append(_ module: Module) -> Self {
            registeredModules[String(count)] = module
            return self
        }

        /// Appends each module; returns self.
        @discardableResult
        public func extend(_ modules: [Module]) -> Self {
            for m in modules { append(m) }
            return self
        }

        /// Inserts `module` before `index`.
        public func insert(_ index: Int, _ module: Module) {
            var mods = registeredModules.values
            let n = mods.count
            precondition(index >= -n && index <= n, "Index out of range: \(index)")
            mods.insert(module, at: index < 0 ? Swift.max(index + n, 0) : index)
            setModules(mods)
        }

        /// Removes and returns the module at `index`; the rest are renumbered.
        @discardableResult
        public func remove(at index: Int) -> Module {
            var mods = registeredModules.values
            let m = mods.remove(at: containerIndex(index, count, typeName))
            setModules(mods)
            return m
        }

        open override func forward(_ x: Tensor) -> Tensor {
            preconditionFailure("ModuleList has no forward(); iterate over it and call its modules")
        }

        /// PyTorch's ModuleList repr, which folds runs of identical modules: `(0-2): 3 x Linear(...)`.
        open override var description: String {
            let reprs = registeredModules.values.map { $0.description }
            if reprs.isEmpty { return typeName + "()" }
            var blocks: [(start: Int, end: Int, repr: String)] = []
            for (i, r) in reprs.enumerated() {
                if let last = blocks.last, last.repr == r { blocks[blocks.count - 1].end = i } else { blocks.append((i, i, r)) }
            }
            let lines = blocks.map { b -> String in
                let line = b.start == b.end ? "(\(b.start)): \(b.repr)" : "(\(b.start)-\(b.end)): \(b.end - b.start + 1) x \(b.repr)"
                return addIndent(line, 2, indentBlank: true)
            }
            return typeName + "(\n  " + lines.joined(separator: "\n  ") + "\n)"
        }
    }

    /// Named modules in insertion order (PyTorch's `nn.ModuleDict`). Iterating gives the keys.
    ///
    /// ```swift
    /// let heads = nn.ModuleDict(["cls": nn.Linear(8, 3), "box": nn.Linear(8, 4)])
    /// let y = heads["cls"]!(x)
    /// ```
    open class ModuleDict: Module, Sequence {
        /// An empty dictionary.
        public override init() { super.init() }

        /// The pairs of a literal, in order.
        public convenience init(_ pairs: KeyValuePairs<String, Module>) {
            self.init(pairs.map { ($0.key, $0.value) })
        }

        /// The given (name, module) pairs, in order.
        public init(_ pairs: [(String, Module)]) {
            super.init()
            for (k, m) in pairs { self[k] = m }
        }

        /// The entries of an ordered dictionary.
        @_disfavoredOverload
        public convenience init(_ dict: OrderedDict<Module>) { self.init(dict.items.map { ($0.key, $0.value) }) }

        /// Number of modules.
        public var count: Int { registeredModules.count }

        /// The module named `key`; assigning adds or replaces it, assigning nil removes it.
        public subscript(key: String) -> Module? {
            get { registeredModules[key] }
            set {
                if let newValue {
                    if registeredModules.contains(key) { registeredModules[key] = newValue } else { addModule(key, newValue) }
                } else {
                    registeredModules[key] = nil
                }
            }
        }

        /// The names, in order.
        public var keys: [String] { registeredModules.keys }
        /// The modules, in order.
        public var values: [Module] { registeredModules.values }
        /// (name, module) pairs, in order.
        public var items: [(key: String, value: Module)] { registeredModules.items }

        /// True when a module is named `key`.
        public func contains(_ key: String) -> Bool { registeredModules.contains(key) }

        /// Removes and returns the module named `key`.
        @discardableResult
        public func pop(_ key: String) -> Module {
            guard let m = registeredModules.removeValue(forKey: key) else { preconditionFailure("ModuleDict: no key '\(key)'") }
            return m
        }

        /// Adds or replaces each pair, in order.
        public func update(_ pairs: [(String, Module)]) {
            for (k, m) in pairs { self[k] = m }
        }

        /// Removes every module.
        public func clear() { registeredModules.removeAll() }

        public func makeIterator() -> IndexingIterator<[String]> { registeredModules.keys.makeIterator() }

        open override func forward(_ x: Tensor) -> Tensor {
            preconditionFailure("ModuleDict has no forward(); call its modules by key")
        }
    }
}

extension nn.Module {
    /// Replaces the registered children with `modules` named `0`, `1`, ...
    final func setModules(_ modules: [nn.Module]) {
        var d = OrderedDict<nn.Module>()
        for (i, m) in modules.enumerated() { d[String(i)] = m }
        registeredModules = d
    }
}

/// Wraps a possibly negative container index, stopping with PyTorch's message when out of range.
private func containerIndex(_ i: Int, _ count: Int, _ name: String) -> Int {
    precondition(i >= -count && i < count, "index \(i) is out of range")
    return i < 0 ? i + count : i
}
