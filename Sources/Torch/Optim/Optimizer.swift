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

        /// Runs `update(group, param, grad, state, updates)` for each parameter with a gradient, without autograd,
        /// then bumps the parameter's version. `update` states the parameter's update once, for either device, in
        /// `updates` (`OptimizerUpdates`), whose CUDA part launches after the last parameter.
        ///
        /// The update kernels walk the parameter, its gradient and its state in memory order, so a non-contiguous
        /// parameter (a transposed view made a Parameter) updates through a contiguous copy (its state buffers are
        /// made like that copy), written back once the updates ran; on both devices alike.
        func forEachParameter(_ update: (ParamGroup, Tensor, Tensor, ParamState, inout OptimizerUpdates) -> Void) {
            if CUDAGraphCapture.isUnderway { checkGraphCapture() }
            var updates = OptimizerUpdates()
            var writeBacks: [(param: Tensor, dense: Tensor)] = []
            torch.noGrad {
                for group in paramGroups {
                    for p in group.params {
                        guard let g = p.grad else { continue }
                        precondition(p.dtype.isFloatingPoint && (p.dtype == .float32 || p.dtype == .float64),
                                     "\(type(of: self)): parameters must be float32 or float64 (got \(p.dtype))")
                        let grad = g.to(p.dtype).contiguous()
                        if p.isContiguous {
                            update(group, p, grad, state(for: p), &updates)
                        } else {
                            let dense = p.contiguous()
                            update(group, dense, grad, state(for: p), &updates)
                            writeBacks.append((p, dense))
                        }
                        p.storage.bumpVersion()
                    }
                }
                updates.launch()
                for (p, dense) in writeBacks { p.copy_(dense) }
            }
        }

        /// Whether `step()` can be captured in a CUDA graph: every value its kernels take by value must be the
        /// same at every replay. Not so when a step count or a bias correction goes in by value (Adam and the
        /// other optimizers that count steps on the host): PyTorch's answer is `capturable=True`, keeping the
        /// step on the device, which SwiftTorch's optimizers do not have yet. `optim.SGD` is capturable.
        var isGraphCapturable: Bool { false }

        /// Refuses a capture of this optimizer's step on a CUDA device when it is not capturable.
        @inline(never) private func checkGraphCapture() {
            guard !isGraphCapturable, paramGroups.contains(where: { $0.params.contains { $0.device != .cpu && $0.grad != nil } })
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
                        // Buffers take the parameter's dtype and device (a checkpoint saved on the CPU resumes
                        // on a GPU), except the step counter, which stays where it was saved (PyTorch's rule
                        // for non-capturable optimizers).
                        s[name] = .tensor(name == "step" ? t.contiguousCopy() : t.to(p.device, dtype: p.dtype).contiguousCopy())
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

/// The updates of one optimizer step, each stated once as the optimizer kernels take it (`OptimizerKernelOp`
/// documents each op's buffers, scalars and flags): the one place where the optimizer family picks a device.
/// A CPU parameter updates at once (`CPUOptimizer`); CUDA parameters wait in a `CUDAOptimizer.Batch` for their
/// multi-tensor launches, which `launch()` runs.
struct OptimizerUpdates {
    private var cuda = CUDAOptimizer.Batch()

    /// Adds one update of `tensors[0]` by `op`: `tensors` are the parameter, its gradient and the state buffers in
    /// `op`'s order (nil = absent, at most 5), all on one device, contiguous, of one dtype and size; `flags` and
    /// `scalars` (at most 8) are the group's; `tensorFlags` and `tensorScalars` (at most 3) this parameter's own.
    mutating func append(_ op: OptimizerKernelOp, tensors: [Tensor?], flags: OptimizerKernelFlags, scalars: [Double],
                         tensorFlags: OptimizerKernelFlags = [], tensorScalars: [Double] = []) {
        guard let p = tensors[0] else { preconditionFailure("optimizer update \(op.name): no parameter") }
        for case let t? in tensors {
            checkSameDevice(p, t)
            precondition(t.dtype == p.dtype && t.isContiguous && t.numel == p.numel,
                         "optimizer update \(op.name): the parameter, its gradient and its state must be contiguous "
                             + "tensors of one dtype and size (got \(t.dtype) \(shapeString(t.shape)) for a \(p.dtype) "
                             + "parameter of \(shapeString(p.shape)))")
        }
        switch p.device {
        case .cpu:
            CPUOptimizer.update(op, tensors, flags: flags.union(tensorFlags), f: scalars, s: tensorScalars)
        case .cuda:
            cuda.append(op, tensors: tensors, flags: flags, scalars: scalars, tensorFlags: tensorFlags, tensorScalars: tensorScalars)
        }
    }

    /// Adds one SGD update of `p` (see `OptimizerKernelOp.sgd`); `buffer` is the momentum buffer when
    /// momentum ≠ 0, and `firstStep` says it takes the gradient as it is.
    mutating func sgd(p: Tensor, grad: Tensor, buffer: Tensor?, lr: Double, momentum: Double, dampening: Double,
                      weightDecay: Double, nesterov: Bool, maximize: Bool, firstStep: Bool) {
        var flags = OptimizerKernelFlags(maximize: maximize, weightDecay: weightDecay)
        if nesterov { flags.insert(.nesterov) }
        if buffer != nil { flags.insert(.momentum) }
        append(.sgd, tensors: [p, grad, buffer], flags: flags, scalars: [lr, momentum, dampening, weightDecay],
               tensorFlags: firstStep ? .firstStep : [])
    }

    /// Adds one Adam/AdamW update of `p` (see `OptimizerKernelOp.adam`); `stepSize` and `bc2Sqrt` follow
    /// `p`'s own step count.
    mutating func adam(p: Tensor, grad: Tensor, expAvg: Tensor, expAvgSq: Tensor, maxExpAvgSq: Tensor?,
                       stepSize: Double, beta1: Double, beta2: Double, eps: Double, weightDecay: Double,
                       bc2Sqrt: Double, lr: Double, maximize: Bool, decoupled: Bool) {
        var flags = OptimizerKernelFlags(maximize: maximize, weightDecay: weightDecay, decoupled: decoupled)
        if maxExpAvgSq != nil { flags.insert(.amsgrad) }
        append(.adam, tensors: [p, grad, expAvg, expAvgSq, maxExpAvgSq], flags: flags,
               scalars: [0, beta1, beta2, eps, weightDecay, 0, 1 - lr * weightDecay], tensorScalars: [stepSize, bc2Sqrt])
    }

    /// Runs the CUDA updates waiting (the CPU ones ran when added).
    mutating func launch() { cuda.launch() }
}
