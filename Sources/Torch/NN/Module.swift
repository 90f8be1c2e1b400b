/// `nn.Module`: the base class of every layer and network, with PyTorch's registration,
/// traversal, mode, conversion, hook, state-dict and printing behaviour.

extension nn {
    /// The base class of layers and networks (PyTorch's `nn.Module`).
    ///
    /// Declare submodules and parameters as stored properties and override `forward(_:)`; call
    /// the module like a function. Properties of type `nn.Module`, `nn.Module?`, `[nn.Module]`
    /// (exposed like an `nn.ModuleList`: `layers.0`, `layers.1`), `nn.Parameter`,
    /// `nn.Parameter?` and `[nn.Parameter]` are found by reflection in declaration order, like
    /// PyTorch's registration order. Buffers and dynamically named members are added with
    /// `registerBuffer(_:_:persistent:)`, `registerParameter(_:_:)` and `addModule(_:_:)`.
    ///
    /// ```swift
    /// final class MyNeuralNet: nn.Module {
    ///     let inputToHiddenLayer = nn.Linear(2, 8)
    ///     let hiddenLayerActivation = nn.ReLU()
    ///     let hiddenToOutputLayer = nn.Linear(8, 1)
    ///     override func forward(_ x: Tensor) -> Tensor {
    ///         hiddenToOutputLayer(hiddenLayerActivation(inputToHiddenLayer(x)))
    ///     }
    /// }
    /// let net = MyNeuralNet()
    /// print(net)                              // MyNeuralNet(\n  (inputToHiddenLayer): Linear(...
    /// let sd = net.stateDict()                // inputToHiddenLayer.weight, inputToHiddenLayer.bias, ...
    /// ```
    open class Module: CustomStringConvertible {
        /// True in training mode (the default), false after `eval()`.
        public var training = true

        // Members registered by name (after the reflected ones, in registration order).
        final var registeredParameters = OrderedDict<Parameter>()
        final var registeredBuffers = OrderedDict<Tensor>()
        final var nonPersistentBuffers = Set<String>()
        final var registeredModules = OrderedDict<Module>()
        /// The ModuleList standing for each `[nn.Module]` property, kept so its identity is stable.
        final var arrayContainers: [String: ModuleList] = [:]
        private final var forwardPreHooks: [(id: Int, hook: (Module, Tensor) -> Tensor?)] = []
        private final var forwardHooks: [(id: Int, hook: (Module, Tensor, Tensor) -> Tensor?)] = []

        public init() {}

        // MARK: Forward

        /// The computation of this module; subclasses override it.
        open func forward(_ x: Tensor) -> Tensor {
            preconditionFailure("Module [\(typeName)] is missing the required \"forward\" function")
        }

        /// Whether forward (pre-)hooks are registered, which must then see every module's own call.
        final var hasForwardHooks: Bool { !forwardPreHooks.isEmpty || !forwardHooks.isEmpty }

        /// Runs forward pre-hooks, `forward(_:)`, then forward hooks (PyTorch's `module(x)`).
        public final func callAsFunction(_ x: Tensor) -> Tensor {
            if _slowPath(ONNXTrace.isOn), let y = ONNXTrace.module(self, x) { return y }   // torch.onnx.export
            if forwardPreHooks.isEmpty && forwardHooks.isEmpty { return forward(x) }
            var input = x
            for (_, hook) in forwardPreHooks { if let r = hook(self, input) { input = r } }
            var output = forward(input)
            for (_, hook) in forwardHooks { if let r = hook(self, input, output) { output = r } }
            return output
        }

        // MARK: Hooks

        nonisolated(unsafe) private static var hookCounter = 0

        /// Registers `hook(module, input)`, run before `forward`; a returned tensor replaces the input.
        @discardableResult
        public final func registerForwardPreHook(_ hook: @escaping (Module, Tensor) -> Tensor?) -> RemovableHandle {
            Module.hookCounter += 1
            forwardPreHooks.append((Module.hookCounter, hook))
            return RemovableHandle(id: Module.hookCounter, module: self)
        }

        /// Registers `hook(module, input, output)`, run after `forward`; a returned tensor replaces the output.
        @discardableResult
        public final func registerForwardHook(_ hook: @escaping (Module, Tensor, Tensor) -> Tensor?) -> RemovableHandle {
            Module.hookCounter += 1
            forwardHooks.append((Module.hookCounter, hook))
            return RemovableHandle(id: Module.hookCounter, module: self)
        }

        final func removeHook(_ id: Int) {
            forwardPreHooks.removeAll { $0.id == id }
            forwardHooks.removeAll { $0.id == id }
        }

        // MARK: Registration

        /// Adds a parameter under `name` (nil removes it), after the reflected ones.
        public final func registerParameter(_ name: String, _ param: Parameter?) {
            checkMemberName(name, kind: "parameter", allowExisting: registeredParameters.contains(name))
            registeredParameters[name] = param
        }

        /// Adds a buffer: a tensor that is part of the module's state but not a parameter
        /// (e.g. BatchNorm's `running_mean`). Non-persistent buffers are left out of `stateDict()`.
        /// `to(_:)` and `loadStateDict(_:)` update buffers in place, so a module may keep its own
        /// reference to the tensor.
        public final func registerBuffer(_ name: String, _ tensor: Tensor?, persistent: Bool = true) {
            checkMemberName(name, kind: "buffer", allowExisting: registeredBuffers.contains(name))
            registeredBuffers[name] = tensor
            if persistent { nonPersistentBuffers.remove(name) } else { nonPersistentBuffers.insert(name) }
        }

        /// Adds a child module under `name` (nil removes it), after the reflected ones.
        public final func addModule(_ name: String, _ module: Module?) {
            checkMemberName(name, kind: "module", allowExisting: registeredModules.contains(name))
            registeredModules[name] = module
        }

        /// Alias of `addModule(_:_:)`.
        public final func registerModule(_ name: String, _ module: Module?) { addModule(name, module) }

        private func checkMemberName(_ name: String, kind: String, allowExisting: Bool) {
            precondition(!name.contains("." as Character), "\(kind) name can't contain \".\", got: \(name)")
            precondition(!name.isEmpty, "\(kind) name can't be empty string \"\"")
            if allowExisting { return }
            let taken = (kind != "parameter" && registeredParameters.contains(name))
                || (kind != "buffer" && registeredBuffers.contains(name))
                || (kind != "module" && registeredModules.contains(name))
                || reflectedMembers().names.contains(name)
            precondition(!taken, "attribute '\(name)' already exists")
        }

        // MARK: Reflection

        /// Parameters and child modules declared as stored properties, in declaration order
        /// (base-class properties first). See `ModuleReflection` for how fields are read.
        final func reflectedMembers(parameters wantParams: Bool = true, modules wantModules: Bool = true)
            -> (params: [(String, Parameter)], modules: [(String, Module)], names: [String]) {
            let layout = ModuleReflection.layout(for: type(of: self))
            if layout.usesMirror { return mirrorMembers() }
            var params: [(String, Parameter)] = []
            var modules: [(String, Module)] = []
            var names: [String] = []
            let base = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
            var i = 0
            while i < layout.fields.count {
                let f = layout.fields[i]
                let p = base + f.offset
                switch f.kind {
                case .module:
                    if wantModules { modules.append((f.name, p.load(as: Module.self))) }
                    names.append(f.name)
                case .tensor:
                    if let t = p.load(as: Tensor.self) as? Parameter {
                        if wantParams { params.append((f.name, t)) }
                        names.append(f.name)
                    }
                case .optionalModule(let loader):
                    let bits = p.load(as: UInt.self)
                    if bits == 0 { break }
                    if !f.verified {
                        ModuleReflection.verify(layout, i, of: self, rawBits: bits)
                        continue   // re-read the field's (possibly updated) kind
                    }
                    if let m = loader.loadModule(p) {
                        if wantModules { modules.append((f.name, m)) }
                        names.append(f.name)
                    }
                case .optionalTensor(let loader):
                    let bits = p.load(as: UInt.self)
                    if bits == 0 { break }
                    if !f.verified {
                        ModuleReflection.verify(layout, i, of: self, rawBits: bits)
                        continue
                    }
                    if let t = loader.loadTensor(p) as? Parameter {
                        if wantParams { params.append((f.name, t)) }
                        names.append(f.name)
                    }
                case .moduleArray(let loader):
                    if wantModules { modules.append((f.name, arrayContainer(f.name, loader.loadModules(p)))) }
                    names.append(f.name)
                case .tensorArray(let loader):
                    if wantParams {
                        for (j, t) in loader.loadTensors(p).enumerated() {
                            if let param = t as? Parameter { params.append(("\(f.name).\(j)", param)) }
                        }
                    }
                    names.append(f.name)
                case .ignored:
                    break
                }
                i += 1
            }
            return (params, modules, names)
        }

        /// The stable ModuleList standing for the array property `name`, holding `elements`.
        private final func arrayContainer(_ name: String, _ elements: [Module]) -> ModuleList {
            let list: ModuleList
            if let l = arrayContainers[name] { list = l } else {
                list = ModuleList()
                list.training = training
                arrayContainers[name] = list
            }
            list.setModules(elements)
            return list
        }

        /// The Mirror-based discovery, for classes with existential-typed properties.
        private final func mirrorMembers() -> (params: [(String, Parameter)], modules: [(String, Module)], names: [String]) {
            var mirrors: [Mirror] = []
            var m: Mirror? = Mirror(reflecting: self)
            while let cur = m, ObjectIdentifier(cur.subjectType) != ObjectIdentifier(Module.self) {
                mirrors.append(cur)
                m = cur.superclassMirror
            }
            var params: [(String, Parameter)] = []
            var modules: [(String, Module)] = []
            var names: [String] = []
            for mirror in mirrors.reversed() {
                for child in mirror.children {
                    guard var name = child.label else { continue }
                    if name.hasPrefix(lazyStoragePrefix) { name.removeFirst(lazyStoragePrefix.count) }
                    let value = child.value
                    if let mod = value as? Module {
                        modules.append((name, mod)); names.append(name)
                    } else if let p = value as? Parameter {
                        params.append((name, p)); names.append(name)
                    } else if type(of: value) is ModuleArrayField.Type, let arr = value as? [Module] {
                        modules.append((name, arrayContainer(name, arr))); names.append(name)
                    } else if type(of: value) is TensorArrayField.Type, let arr = value as? [Tensor] {
                        for (i, t) in arr.enumerated() {
                            if let p = t as? Parameter { params.append(("\(name).\(i)", p)) }
                        }
                        names.append(name)
                    }
                }
            }
            return (params, modules, names)
        }

        /// This module's own parameters (reflected, then registered).
        final func localParameters() -> [(String, Parameter)] {
            let r = reflectedMembers(modules: false).params
            return registeredParameters.isEmpty ? r : r + registeredParameters.items.map { ($0.key, $0.value) }
        }

        /// This module's direct children (reflected, then registered), duplicates included.
        final func localChildren() -> [(String, Module)] {
            let r = reflectedMembers(parameters: false).modules
            return registeredModules.isEmpty ? r : r + registeredModules.items.map { ($0.key, $0.value) }
        }

        /// This module's own buffers.
        final func localBuffers(persistentOnly: Bool = false) -> [(String, Tensor)] {
            registeredBuffers.items.compactMap { persistentOnly && nonPersistentBuffers.contains($0.key) ? nil : ($0.key, $0.value) }
        }

        // MARK: Traversal

        /// Parameters of this module and (when `recurse`) its descendants, each once.
        public final func parameters(recurse: Bool = true) -> [Parameter] {
            var seen = Set<ObjectIdentifier>()
            var out: [Parameter] = []
            let mods = recurse ? modules() : [self]
            for m in mods {
                for (_, p) in m.localParameters() where seen.insert(ObjectIdentifier(p)).inserted { out.append(p) }
            }
            return out
        }

        /// (qualified name, parameter) pairs, e.g. `("layer1.0.weight", w)`, each parameter once.
        public final func namedParameters(prefix: String = "", recurse: Bool = true,
                                          removeDuplicate: Bool = true) -> [(String, Parameter)] {
            var seen = Set<ObjectIdentifier>()
            var out: [(String, Parameter)] = []
            let mods = recurse ? namedModules(prefix: prefix, removeDuplicate: removeDuplicate) : [(prefix, self)]
            for (mp, m) in mods {
                for (n, p) in m.localParameters() {
                    if removeDuplicate && !seen.insert(ObjectIdentifier(p)).inserted { continue }
                    out.append((joinName(mp, n), p))
                }
            }
            return out
        }

        /// Buffers of this module and (when `recurse`) its descendants, each once.
        public final func buffers(recurse: Bool = true) -> [Tensor] {
            namedBuffers(recurse: recurse).map { $0.1 }
        }

        /// (qualified name, buffer) pairs, e.g. `("bn.running_mean", t)`, each buffer once.
        public final func namedBuffers(prefix: String = "", recurse: Bool = true,
                                       removeDuplicate: Bool = true) -> [(String, Tensor)] {
            var seen = Set<ObjectIdentifier>()
            var out: [(String, Tensor)] = []
            let mods = recurse ? namedModules(prefix: prefix, removeDuplicate: removeDuplicate) : [(prefix, self)]
            for (mp, m) in mods {
                for (n, b) in m.localBuffers() {
                    if removeDuplicate && !seen.insert(ObjectIdentifier(b)).inserted { continue }
                    out.append((joinName(mp, n), b))
                }
            }
            return out
        }

        /// Direct children, each once.
        public final func children() -> [Module] { namedChildren().map { $0.1 } }

        /// (name, child) pairs of the direct children, each once.
        public final func namedChildren() -> [(String, Module)] {
            var seen = Set<ObjectIdentifier>()
            return localChildren().filter { seen.insert(ObjectIdentifier($0.1)).inserted }
        }

        /// This module and all its descendants, depth first, each once.
        public final func modules() -> [Module] {
            var seen = Set<ObjectIdentifier>()
            var out: [Module] = []
            func visit(_ m: Module) {
                guard seen.insert(ObjectIdentifier(m)).inserted else { return }
                out.append(m)
                for (_, c) in m.localChildren() { visit(c) }
            }
            visit(self)
            return out
        }

        /// (qualified name, module) pairs of this module (named `prefix`, "" by default) and all
        /// its descendants, depth first, each once.
        public final func namedModules(prefix: String = "", removeDuplicate: Bool = true) -> [(String, Module)] {
            var seen = Set<ObjectIdentifier>()
            var out: [(String, Module)] = []
            func visit(_ m: Module, _ p: String) {
                if removeDuplicate && !seen.insert(ObjectIdentifier(m)).inserted { return }
                out.append((p, m))
                for (n, c) in m.localChildren() { visit(c, joinName(p, n)) }
            }
            visit(self, prefix)
            return out
        }

        /// The submodule at a dotted path such as `"layer1.0"` ("" is self).
        public final func getSubmodule(_ target: String) -> Module {
            if target.isEmpty { return self }
            var m: Module = self
            for part in target.split(separator: ".", omittingEmptySubsequences: false).map(String.init) {
                guard let next = m.localChildren().first(where: { $0.0 == part })?.1 else {
                    preconditionFailure("\(m.typeName) has no attribute `\(part)`")
                }
                m = next
            }
            return m
        }

        /// The parameter at a dotted path such as `"fc.weight"`.
        public final func getParameter(_ target: String) -> Parameter {
            let (path, name) = splitTarget(target)
            let m = getSubmodule(path)
            guard let p = m.localParameters().first(where: { $0.0 == name })?.1 else {
                preconditionFailure("\(m.typeName) has no parameter `\(name)`")
            }
            return p
        }

        /// The buffer at a dotted path such as `"bn.running_mean"`.
        public final func getBuffer(_ target: String) -> Tensor {
            let (path, name) = splitTarget(target)
            let m = getSubmodule(path)
            guard let b = m.registeredBuffers[name] else { preconditionFailure("\(m.typeName) has no buffer `\(name)`") }
            return b
        }

        private func splitTarget(_ t: String) -> (String, String) {
            guard let dot = t.lastIndex(of: ".") else { return ("", t) }
            return (String(t[..<dot]), String(t[t.index(after: dot)...]))
        }

        // MARK: Modes and conversions

        /// Sets training mode on this module and its descendants; returns self.
        @discardableResult
        open func train(_ mode: Bool = true) -> Self {
            training = mode
            for c in children() { c.train(mode) }
            return self
        }

        /// Sets evaluation mode (`train(false)`); returns self.
        @discardableResult
        public final func eval() -> Self { train(false) }

        /// Converts floating parameters, their gradients and floating buffers to `dtype`, in place:
        /// the parameter objects stay the same, so optimizers holding them keep working.
        @discardableResult
        public final func to(_ dtype: DType) -> Self {
            precondition(dtype.isFloatingPoint,
                         "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=\(dtype)")
            convertTensors { $0.isFloatingPoint && $0.dtype != dtype ? $0.to(dtype) : nil }
            return self
        }

        /// Moves parameters, their gradients and buffers to `device`, in place (the same `Parameter` objects,
        /// so an optimizer made before the move keeps working, as in PyTorch); returns self.
        ///
        /// ```swift
        /// let model = nn.Linear(784, 10).to(.cuda(0))
        /// ```
        @discardableResult
        public final func to(_ device: Device) -> Self {
            convertTensors { $0.device != device ? $0.to(device) : nil }
            return self
        }

        /// Moves to a device given by name ("cpu", "cuda", "cuda:1"); returns self.
        @discardableResult
        public final func to(_ device: String) -> Self { to(Device(device)) }

        /// Moves parameters and buffers to `device` and converts the floating ones to `dtype`; returns self.
        @discardableResult
        public final func to(_ device: Device, dtype: DType) -> Self { to(device).to(dtype) }

        /// Moves to the CPU; returns self.
        @discardableResult
        public final func cpu() -> Self { to(Device.cpu) }
        /// Moves to CUDA device `index`; returns self.
        @discardableResult
        public final func cuda(_ index: Int? = nil) -> Self { to(Device.cuda(index ?? CUDACurrentDevice.index)) }
        /// Floating parameters and buffers to float64.
        @discardableResult
        public final func double() -> Self { to(.float64) }
        /// Floating parameters and buffers to float32.
        @discardableResult
        public final func float() -> Self { to(.float32) }
        /// Floating parameters and buffers to float16.
        @discardableResult
        public final func half() -> Self { to(.float16) }
        /// Floating parameters and buffers to bfloat16.
        @discardableResult
        public final func bfloat16() -> Self { to(.bfloat16) }

        /// Replaces every parameter's, gradient's and buffer's contents with `f(tensor)` where it is non-nil.
        final func convertTensors(_ f: (Tensor) -> Tensor?) {
            torch.noGrad {
                for p in parameters() {
                    if let c = f(p) { p.replaceContents(with: c) }
                    if let g = p.grad, let c = f(g) { p.grad = c }
                }
                for b in buffers() {
                    if let c = f(b) { b.replaceContents(with: c) }
                }
            }
        }

        /// Clears parameter gradients: sets them to nil (default) or fills them with zeros.
        public final func zeroGrad(setToNone: Bool = true) {
            for p in parameters() {
                guard let g = p.grad else { continue }
                if setToNone { p.grad = nil; continue }
                if g.gradFn != nil { g.detach_() } else if g.requiresGrad { g.requiresGrad = false }
                torch.noGrad { _ = g.zero_() }
            }
        }

        /// Calls `fn` on every descendant (children first) and then on self; returns self.
        ///
        /// ```swift
        /// model.apply { m in if let l = m as? nn.Linear { nn.init_.zeros_(l.bias!) } }
        /// ```
        @discardableResult
        public final func apply(_ fn: (Module) -> Void) -> Self {
            for c in children() { c.apply(fn) }
            fn(self)
            return self
        }

        /// Sets `requiresGrad` on every parameter; returns self.
        @discardableResult
        public final func requiresGrad_(_ requiresGrad: Bool = true) -> Self {
            for p in parameters() { p.requiresGrad = requiresGrad }
            return self
        }

        // MARK: State dict

        /// Parameters and persistent buffers by PyTorch's qualified names (`fc1.weight`,
        /// `layer1.0.bias`, `bn.running_mean`), in PyTorch's order; values are detached and share
        /// storage with the module's tensors.
        public final func stateDict(prefix: String = "", keepVars: Bool = false) -> OrderedDict<Tensor> {
            var d = OrderedDict<Tensor>()
            func save(_ m: Module, _ p: String) {
                for (n, t) in m.localParameters() { d[p + n] = keepVars ? t : t.detach() }
                for (n, t) in m.localBuffers(persistentOnly: true) { d[p + n] = keepVars ? t : t.detach() }
                for (n, c) in m.localChildren() { save(c, p + n + ".") }
            }
            save(self, prefix)
            return d
        }

        /// Copies `stateDict`'s tensors into this module's parameters and persistent buffers, in
        /// place and without recording autograd. A snake_case key also matches a camelCase
        /// property (`input_to_hidden_layer.weight` loads into `inputToHiddenLayer.weight`).
        ///
        /// - Throws: `StateDictLoadError` with PyTorch's message when a shape differs, or (when
        ///   `strict`) when keys are missing or unexpected.
        /// - Returns: the missing and unexpected keys (both empty after a strict load).
        @discardableResult
        public final func loadStateDict(_ stateDict: OrderedDict<Tensor>, strict: Bool = true) throws
            -> (missingKeys: [String], unexpectedKeys: [String]) {
            let keys = stateDict.keys, values = stateDict.values
            let normalized = keys.map(normalizeStateDictKey)
            var exactIndex: [String: Int] = [:], normIndex: [String: Int] = [:]
            for (i, k) in keys.enumerated() {
                if exactIndex[k] == nil { exactIndex[k] = i }
                if normIndex[normalized[i]] == nil { normIndex[normalized[i]] = i }
            }
            var missing: [String] = [], unexpected: [String] = [], errors: [String] = []
            func load(_ m: Module, _ prefix: String) {
                // A tensor both reflected and registered under one name is loaded (and reported) once.
                var localNames = Set<String>()
                let local: [(String, Tensor)] = (m.localParameters().map { ($0.0, $0.1 as Tensor) }
                    + m.localBuffers(persistentOnly: true)).filter { localNames.insert($0.0).inserted }
                let children = m.localChildren()
                for (name, t) in local {
                    let key = prefix + name
                    guard let i = exactIndex[key] ?? normIndex[normalizeStateDictKey(key)] else {
                        missing.append(key); continue
                    }
                    var input = values[i]
                    if t.dim == 0 && input.shape == [1] { input = input.reshape([]) }
                    if input.shape != t.shape {
                        errors.append(StateDictLoadError.sizeMismatchMessage(key: key, checkpointShape: input.shape, modelShape: t.shape))
                        continue
                    }
                    torch.noGrad { _ = t.copy_(input) }
                }
                let normPrefix = normalizeStateDictKey(prefix)
                let normalizedLocalNames = Set(local.map { normalizeStateDictKey($0.0) })
                let childNames = Set(children.map { normalizeStateDictKey($0.0) })
                for (k, nk) in zip(keys, normalized) where nk.hasPrefix(normPrefix) {
                    let rest = nk.dropFirst(normPrefix.count)
                    if normalizedLocalNames.contains(String(rest)) { continue }
                    if let dot = rest.firstIndex(of: "."), childNames.contains(String(rest[..<dot])) { continue }
                    unexpected.append(k)
                }
                for (n, c) in children { load(c, prefix + n + ".") }
            }
            load(self, "")
            if strict {
                if !unexpected.isEmpty { errors.insert(StateDictLoadError.unexpectedKeysMessage(unexpected), at: 0) }
                if !missing.isEmpty { errors.insert(StateDictLoadError.missingKeysMessage(missing), at: 0) }
            }
            if !errors.isEmpty {
                throw StateDictLoadError(moduleName: typeName, missingKeys: missing, unexpectedKeys: unexpected, errorMessages: errors)
            }
            return (missing, unexpected)
        }

        /// `loadStateDict` from (key, tensor) pairs in order.
        @discardableResult
        public final func loadStateDict(_ pairs: [(String, Tensor)], strict: Bool = true) throws
            -> (missingKeys: [String], unexpectedKeys: [String]) {
            try loadStateDict(OrderedDict(pairs), strict: strict)
        }

        /// `loadStateDict` from a Swift dictionary (keys taken in sorted order).
        @discardableResult
        public final func loadStateDict(_ dict: [String: Tensor], strict: Bool = true) throws
            -> (missingKeys: [String], unexpectedKeys: [String]) {
            try loadStateDict(OrderedDict(dict.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }), strict: strict)
        }

        // MARK: Printing

        /// The class name used when printing (`Linear`, `MyNeuralNet`), without module or generic qualifiers.
        open var typeName: String {
            var s = String(describing: type(of: self))
            if let i = s.firstIndex(of: "<") { s = String(s[..<i]) }
            if let i = s.firstIndex(of: " ") { s = String(s[..<i]) }
            if let i = s.lastIndex(of: ".") { s = String(s[s.index(after: i)...]) }
            return s
        }

        /// Extra information shown inside the parentheses when printing, e.g.
        /// `in_features=2, out_features=8, bias=True`. Override to customise.
        open func extraRepr() -> String { "" }

        /// PyTorch's module repr: the type name, `extraRepr()`, and the children indented.
        open var description: String {
            let extra = extraRepr()
            let extraLines = extra.isEmpty ? [] : extra.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let childLines = localChildren().map { "(\($0.0)): " + addIndent($0.1.description, 2) }
            let lines = extraLines + childLines
            var s = typeName + "("
            if !lines.isEmpty {
                if extraLines.count == 1 && childLines.isEmpty {
                    s += extraLines[0]
                } else {
                    s += "\n  " + lines.joined(separator: "\n  ") + "\n"
                }
            }
            return s + ")"
        }
    }

    /// Returned by `registerForwardHook`/`registerForwardPreHook`; `remove()` unregisters the hook.
    public final class RemovableHandle {
        let id: Int
        weak var module: Module?
        init(id: Int, module: Module) {
            self.id = id
            self.module = module
        }
        /// Unregisters the hook (no effect when already removed).
        public func remove() { module?.removeHook(id) }
    }
}

/// The error `loadStateDict` throws, with PyTorch's message.
///
/// ```
/// Error(s) in loading state_dict for Net:
///     Missing key(s) in state_dict: "fc.bias".
/// ```
public struct StateDictLoadError: Error, CustomStringConvertible {
    /// The type name of the module being loaded.
    public let moduleName: String
    /// Keys the module has that the state dict lacks.
    public let missingKeys: [String]
    /// Keys of the state dict the module has no place for.
    public let unexpectedKeys: [String]
    /// One line per problem, in PyTorch's order.
    public let errorMessages: [String]

    public var description: String {
        "Error(s) in loading state_dict for \(moduleName):\n\t" + errorMessages.joined(separator: "\n\t")
    }

    static func missingKeysMessage(_ keys: [String]) -> String {
        "Missing key(s) in state_dict: " + keys.map { "\"\($0)\"" }.joined(separator: ", ") + ". "
    }
    static func unexpectedKeysMessage(_ keys: [String]) -> String {
        "Unexpected key(s) in state_dict: " + keys.map { "\"\($0)\"" }.joined(separator: ", ") + ". "
    }
    static func sizeMismatchMessage(key: String, checkpointShape: [Int], modelShape: [Int]) -> String {
        "size mismatch for \(key): copying a param with shape torch.Size(\(shapeString(checkpointShape))) from checkpoint, the shape in current model is torch.Size(\(shapeString(modelShape)))."
    }
}

@inline(__always) private func joinName(_ prefix: String, _ name: String) -> String {
    prefix.isEmpty ? name : prefix + "." + name
}

/// A state-dict key with each snake_case component made camelCase (`input_to_hidden_layer.weight`
/// → `inputToHiddenLayer.weight`), so either spelling matches a module member.
func normalizeStateDictKey(_ key: String) -> String {
    guard key.contains("_" as Character) else { return key }
    var out = ""
    out.reserveCapacity(key.count)
    var upper = false
    var atComponentStart = true
    for ch in key {
        if ch == "." {
            out.append(ch); upper = false; atComponentStart = true; continue
        }
        if ch == "_" && !atComponentStart {
            upper = true; continue
        }
        out += upper ? ch.uppercased() : String(ch)
        upper = false
        atComponentStart = false
    }
    return out
}

/// PyTorch's `_addindent`: indents every line after the first by `spaces` (blank lines stay empty).
func addIndent(_ s: String, _ spaces: Int, indentBlank: Bool = false) -> String {
    let lines = s.split(separator: "\n", omittingEmptySubsequences: false)
    if lines.count == 1 { return s }
    let pad = String(repeating: " ", count: spaces)
    let rest = lines.dropFirst().map { line -> String in
        (indentBlank || !line.allSatisfy { $0 == " " || $0 == "\t" }) ? pad + line : ""
    }
    return ([String(lines[0])] + rest).joined(separator: "\n")
}

extension Tensor {
    /// Makes this tensor view `t`'s contents in place: same object (so optimizers and modules
    /// holding it keep working), new storage, shape, strides and dtype.
    func replaceContents(with t: Tensor) {
        storage = t.storage
        shape = t.shape
        strides = t.strides
        storageOffset = t.storageOffset
        dtype = t.dtype
    }
}
