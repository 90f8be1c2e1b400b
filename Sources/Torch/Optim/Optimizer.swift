/// PyTorch's `torch.optim`: optimizers with parameter groups whose hyper-parameters can be read
/// and changed (`opt.paramGroups[0].lr *= 0.1`), per-parameter state, and state dicts.
public enum optim {}

extension optim {
    /// A set of parameters sharing hyper-parameters (PyTorch's `param_groups[i]` dict).
    public final class ParamGroup {
        /// The parameters updated with this group's options.
        public var params: [Tensor]
        /// Option names in PyTorch's order (e.g. `lr`, `momentum`, `weight_decay`).
        public private(set) var keys: [String] = []
        private var values: [String: StateValue] = [:]

        /// A group with its own options; missing options are filled from the optimizer's defaults.
        public init(params: [Tensor], options: [String: StateValue] = [:]) {
            self.params = params
            for k in options.keys.sorted() { self[k] = options[k] }
        }

        /// An option by PyTorch name (`group["momentum"]`).
        public subscript(key: String) -> StateValue? {
            get { values[key] }
            set {
                if values[key] == nil, newValue != nil { keys.append(key) }
                if newValue == nil { keys.removeAll { $0 == key } }
                values[key] = newValue
            }
        }

        /// A numeric option (stops if it is missing).
        public func double(_ key: String) -> Double {
            guard let v = values[key]?.doubleValue else { preconditionFailure("param group has no numeric option '\(key)'") }
            return v
        }

        /// A Bool option (false if missing).
        public func bool(_ key: String) -> Bool { values[key]?.boolValue ?? false }

        /// A pair option such as `betas`.
        public func pair(_ key: String) -> (Double, Double) {
            guard let a = values[key]?.arrayValue, a.count == 2, let x = a[0].doubleValue, let y = a[1].doubleValue else {
                preconditionFailure("param group option '\(key)' must be a pair of numbers")
            }
            return (x, y)
        }

        /// The learning rate.
        public var lr: Double {
            get { double("lr") }
            set { self["lr"] = .double(newValue) }
        }
    }

    /// Per-parameter state (e.g. `momentum_buffer`, `exp_avg`, `step`), ordered like PyTorch's.
    public final class ParamState {
        public private(set) var entries: [(key: String, value: StateValue)] = []

        public subscript(key: String) -> StateValue? {
            get { entries.first { $0.key == key }?.value }
            set {
                if let i = entries.firstIndex(where: { $0.key == key }) {
                    if let v = newValue { entries[i].value = v } else { entries.remove(at: i) }
                } else if let v = newValue {
                    entries.append((key, v))
                }
            }
        }

        /// A tensor buffer, created with `make()` the first time.
        func buffer(_ key: String, _ make: () -> Tensor) -> Tensor {
            if let t = self[key]?.tensorValue { return t }
            let t = make()
            self[key] = .tensor(t)
            return t
        }

        /// Increments the step counter (a 0-d float32 tensor, as PyTorch stores it) and returns it.
        func incrementStep() -> Double {
            let t = buffer("step") { torch.zeros([], dtype: .float32) }
            let s = t.item() + 1
            fillKernel(t, s)
            return s
        }

        var isEmpty: Bool { entries.isEmpty }
    }

    /// Base class of the optimizers: holds parameter groups and state; subclasses implement `step()`.
    open class Optimizer {
        /// The parameter groups; change hyper-parameters here (`paramGroups[0].lr = 0.01`).
        public var paramGroups: [ParamGroup] = []
        /// Default options, in PyTorch's order.
        public let defaults: [(key: String, value: StateValue)]
        private var stateByParam: [ObjectIdentifier: ParamState] = [:]

        /// Creates an optimizer over `params` with `defaults` for every option.
        public init(_ params: [Tensor], defaults: [(key: String, value: StateValue)]) {
            self.defaults = defaults
            addParamGroup(ParamGroup(params: params))
        }

        /// Creates an optimizer from several groups (options not set in a group come from `defaults`).
        public init(groups: [ParamGroup], defaults: [(key: String, value: StateValue)]) {
            self.defaults = defaults
            for g in groups { addParamGroup(g) }
        }

        /// Adds a group, filling unset options from the defaults.
        public func addParamGroup(_ group: ParamGroup) {
            precondition(!group.params.isEmpty, "optimizer got an empty parameter list")
            let existing = Set(paramGroups.flatMap { $0.params.map(ObjectIdentifier.init) })
            for p in group.params {
                precondition(!existing.contains(ObjectIdentifier(p)), "some parameters appear in more than one parameter group")
                precondition(p.isLeaf, "can't optimize a non-leaf Tensor")
            }
            let own = group.keys.map { ($0, group[$0]!) }
            for k in group.keys { group[k] = nil }
            for (k, v) in defaults { group[k] = v }
            for (k, v) in own { group[k] = v }
            paramGroups.append(group)
        }

        /// The state of one parameter (created empty on first use).
        public func state(for p: Tensor) -> ParamState {
            if let s = stateByParam[ObjectIdentifier(p)] { return s }
            let s = ParamState()
            stateByParam[ObjectIdentifier(p)] = s
            return s
        }

        /// Clears gradients (to nil by default, like PyTorch 2.x; zero-filled when `setToNone` is false).
        public func zeroGrad(setToNone: Bool = true) {
            for g in paramGroups {
                for p in g.params {
                    if setToNone { p.grad = nil } else if let gr = p.grad { torch.noGrad { _ = gr.detach().zero_() } }
                }
            }
        }

        /// Performs one update. Subclasses override.
        open func step() { preconditionFailure("\(type(of: self)).step() is not implemented") }

        /// Re-evaluates the loss with `closure`, then steps; returns the loss.
        @discardableResult
        public func step(_ closure: () -> Tensor) -> Tensor {
            let loss = torch.enableGrad(closure)
            step()
            return loss
        }

        /// Runs `update(group, param, grad, state, fused)` for each parameter with a gradient, without autograd,
        /// then bumps the parameter's version. Contiguous CUDA parameters go into `fused` (`CUDAOptimizer.Batch`)
        /// instead of updating one by one; its multi-tensor launches run once every parameter was visited.
        func forEachParameter(_ update: (ParamGroup, Tensor, Tensor, ParamState, inout CUDAOptimizer.Batch) -> Void) {
            if CUDAGraphCapture.isUnderway { checkGraphCapture() }
            var fused = CUDAOptimizer.Batch()
            defer { fused.launch() }
            torch.noGrad {
                for group in paramGroups {
                    for p in group.params {
                        guard let g = p.grad else { continue }
                        precondition(p.dtype.isFloatingPoint && (p.dtype == .float32 || p.dtype == .float64),
                                     "\(type(of: self)): parameters must be float32 or float64 (got \(p.dtype))")
                        let grad = g.to(p.dtype).contiguous()
                        if p.isCuda || p.isContiguous {
                            update(group, p, grad, state(for: p), &fused)
                        } else {
                            // The CPU updates walk a parameter's memory in order, the gradient and the state
                            // buffers in logical order: a non-contiguous parameter (a transposed view made a
                            // Parameter) updates through a contiguous copy written back.
                            let dense = p.contiguous()
                            update(group, dense, grad, state(for: p), &fused)
                            p.copy_(dense)
                        }
                        p.storage.bumpVersion()
                    }
                }
            }
        }

        /// Whether `step()` can be captured in a CUDA graph: every value its kernels take by value must be the
        /// same at every replay. Not so when a step count or a bias correction goes in by value (Adam and the
        /// other optimizers that count steps on the host): PyTorch's answer is `capturable=True`, keeping the
        /// step on the device, which SwiftTorch's optimizers do not have yet. `optim.SGD` is capturable.
        var isGraphCapturable: Bool { false }

        /// Refuses a capture of this optimizer's step on a CUDA device when it is not capturable.
        @inline(never) private func checkGraphCapture() {
            guard !isGraphCapturable, paramGroups.contains(where: { $0.params.contains { $0.isCuda && $0.grad != nil } })
            else { return }
            CUDAGraphCapture.refuse("Attempting CUDA graph capture of step() for an instance of \(type(of: self)) but "
                + "param_groups' capturable is False (its step count and bias corrections are host values a graph "
                + "would freeze; SwiftTorch has no capturable optimizers besides optim.SGD yet: call step() outside "
                + "the graph)")
        }

        // MARK: State dicts

        /// `{"state": {index: {...}}, "param_groups": [{options..., "params": [indices]}]}` like PyTorch.
        public func stateDict() -> StateValue {
            var stateEntries: [(key: StateValue, value: StateValue)] = []
            var groups: [StateValue] = []
            var index = 0
            for g in paramGroups {
                var ids: [StateValue] = []
                for p in g.params {
                    if let s = stateByParam[ObjectIdentifier(p)], !s.isEmpty {
                        stateEntries.append((.int(index), .dict(s.entries.map { (.string($0.key), $0.value) })))
                    }
                    ids.append(.int(index))
                    index += 1
                }
                var d: [(key: StateValue, value: StateValue)] = g.keys.map { (.string($0), g[$0]!) }
                d.append((.string("params"), .list(ids)))
                groups.append(.dict(d))
            }
            return .dict([(.string("state"), .dict(stateEntries)), (.string("param_groups"), .list(groups))])
        }

        /// Restores options and state saved by `stateDict()` (or by PyTorch for the same optimizer).
        public func loadStateDict(_ sd: StateValue) throws {
            guard let groups = sd["param_groups"]?.arrayValue, let state = sd["state"] else {
                throw OptimizerError.invalidStateDict("expected keys 'state' and 'param_groups'")
            }
            guard groups.count == paramGroups.count else {
                throw OptimizerError.invalidStateDict("loaded state dict has a different number of parameter groups (\(groups.count) vs \(paramGroups.count))")
            }
            var params: [Tensor] = []
            for (g, saved) in zip(paramGroups, groups) {
                guard let ids = saved["params"]?.arrayValue, ids.count == g.params.count else {
                    throw OptimizerError.invalidStateDict("loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
                }
                params.append(contentsOf: g.params)
                for (k, v) in saved.dictValue ?? [] {
                    guard let key = k.stringValue, key != "params" else { continue }
                    g[key] = v
                }
            }
            stateByParam = [:]
            var flatIndex = 0
            var indexToParam: [Int: Tensor] = [:]
            for saved in groups {
                for id in saved["params"]?.arrayValue ?? [] {
                    if let i = id.intValue { indexToParam[i] = params[flatIndex] }
                    flatIndex += 1
                }
            }
            for (k, v) in state.dictValue ?? [] {
                guard let i = k.intValue, let p = indexToParam[i], let entries = v.dictValue else { continue }
                let s = ParamState()
                for (ek, ev) in entries {
                    guard let name = ek.stringValue else { continue }
                    if case .tensor(let t) = ev {
                        // Buffers take the parameter's dtype, except the step counter.
                        s[name] = .tensor(name == "step" ? t.contiguousCopy() : t.to(p.dtype).contiguousCopy())
                    } else {
                        s[name] = ev
                    }
                }
                stateByParam[ObjectIdentifier(p)] = s
            }
        }
    }

    /// Errors from loading optimizer or scheduler state.
    public enum OptimizerError: Error, CustomStringConvertible {
        case invalidStateDict(String)
        public var description: String {
            switch self {
            case .invalidStateDict(let m): return "invalid optimizer state dict: \(m)"
            }
        }
    }
}

/// Runs `body(range)` over `0..<n` in parallel chunks (the per-element optimizer updates).
@inline(__always)
func fusedUpdate(_ n: Int, _ body: (Range<Int>) -> Void) {
    parallelFor(n, grain: elementwiseGrain) { lo, hi in body(lo..<hi) }
}

/// Pointer to a contiguous float tensor's elements as `T`.
@inline(__always) func mutablePointer<T>(_ t: Tensor, _: T.Type) -> UnsafeMutablePointer<T> { t.pointer(T.self) }

/// The gradient a GPU update uses: negated when maximizing, plus `weightDecay · p` (PyTorch's coupled decay).
/// The optimizers' CUDA paths compose their updates from device ops on it for the parameters that cannot go
/// through the multi-tensor kernels (`CUDAOptimizer.canFuse`).
func deviceGradient(_ g: Tensor, _ p: Tensor, maximize: Bool, weightDecay: Double) -> Tensor {
    var grad = maximize ? -g : g
    if weightDecay != 0 { grad = grad + p * weightDecay }
    return grad
}
