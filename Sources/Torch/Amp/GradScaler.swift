extension torch.amp {
    /// Loss scaling for float16 training (PyTorch's `torch.amp.GradScaler`): multiplies the loss by a large
    /// factor before `backward()` so small float16 gradients do not flush to zero, divides the gradients by it
    /// before the optimizer steps, skips steps whose gradients hold inf or NaN, and adapts the factor: halved
    /// (`backoffFactor`) after a skipped step, doubled (`growthFactor`) after `growthInterval` clean ones.
    ///
    /// ```swift
    /// let scaler = torch.amp.GradScaler(device: "cuda")
    /// let loss = torch.autocast(deviceType: "cuda", dtype: .float16) { criterion(model(x), y) }
    /// scaler.scale(loss).backward()
    /// scaler.unscale_(optimizer)                      // only to clip or inspect the true gradients
    /// nn.utils.clipGradNorm_(model.parameters(), maxNorm: 1)
    /// scaler.step(optimizer)                          // skipped when a gradient is inf/NaN
    /// scaler.update()
    /// ```
    ///
    /// The scale lives on the host: `scale(_:)` multiplies by a number, so it launches no copy; `step(_:)` reads
    /// back one flag per optimizer (PyTorch synchronises there too).
    public final class GradScaler {
        private var scaleValue: Double
        private var growthFactor: Double
        private var backoffFactor: Double
        private var growthInterval: Int
        private var growthTracker = 0
        private let enabled: Bool
        /// Where each optimizer is between two `update()` calls.
        private enum Stage { case ready, unscaled, stepped }
        private var perOptimizer: [ObjectIdentifier: (stage: Stage, foundInf: Bool?)] = [:]

        /// - Parameters:
        ///   - device: "cuda" (disabled with a warning when no GPU is usable, as in PyTorch) or "cpu".
        ///   - initScale: the first scale factor.
        ///   - growthFactor: the factor the scale grows by after `growthInterval` steps without inf/NaN.
        ///   - backoffFactor: the factor it shrinks by after a step with inf/NaN.
        ///   - growthInterval: clean steps between two growths.
        ///   - enabled: false makes every method a pass-through (`step` just steps).
        public init(device: String = "cuda", initScale: Double = 65536.0, growthFactor: Double = 2.0,
                    backoffFactor: Double = 0.5, growthInterval: Int = 2000, enabled: Bool = true) {
            precondition(device == "cuda" || device == "cpu", "GradScaler: expected device 'cuda' or 'cpu', got '\(device)'")
            var on = enabled
            if on && device == "cuda" && !torch.cuda.isAvailable() {
                Autocast.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
                on = false
            }
            if on {
                precondition(growthFactor > 1, "The growth factor must be > 1.0.")
                precondition(backoffFactor < 1, "The backoff factor must be < 1.0.")
            }
            self.enabled = on
            self.scaleValue = initScale
            self.growthFactor = growthFactor
            self.backoffFactor = backoffFactor
            self.growthInterval = growthInterval
        }

        /// Whether the scaler scales (false when disabled, or asked for CUDA without a GPU).
        public func isEnabled() -> Bool { enabled }

        /// `output × scale` (unchanged when disabled); call `backward()` on the result.
        public func scale(_ output: Tensor) -> Tensor {
            guard enabled else { return output }
            return output * scaleValue
        }

        /// Each output times the scale.
        public func scale(_ outputs: [Tensor]) -> [Tensor] { outputs.map { scale($0) } }

        /// Divides `optimizer`'s gradients by the scale in place and records whether any is inf or NaN. Call it
        /// at most once per optimizer between two `update()` calls, before `step`, when the true gradients are
        /// needed (to clip them); `step` calls it otherwise.
        public func unscale_(_ optimizer: optim.Optimizer) {
            guard enabled else { return }
            let id = ObjectIdentifier(optimizer)
            let stage = perOptimizer[id]?.stage ?? .ready
            precondition(stage != .unscaled, "unscale_() has already been called on this optimizer since the last update().")
            precondition(stage != .stepped, "unscale_() is being called after step().")
            let inverse = Double(Float(1 / scaleValue))   // PyTorch: the double reciprocal rounded to float32
            var checks: [Device: Tensor] = [:]
            torch.noGrad {
                for group in optimizer.paramGroups {
                    for p in group.params {
                        guard let g = p.grad else { continue }
                        precondition(g.dtype != .float16, "Attempting to unscale FP16 gradients.")
                        // g · 0 is 0 where g is finite and NaN where it is inf or NaN, so its sum is NaN exactly
                        // when some element is not finite (no overflow, unlike summing g itself).
                        let probe = g.mul(0).sum(dtype: .float32)
                        checks[g.device] = checks[g.device].map { $0 + probe } ?? probe
                        g.mul_(inverse)
                    }
                }
            }
            let found = checks.isEmpty ? nil : checks.values.contains { $0.isnan().item(as: Bool.self) }
            perOptimizer[id] = (.unscaled, found)
        }

        /// Unscales `optimizer`'s gradients if `unscale_` has not, then runs `optimizer.step()` unless a
        /// gradient is inf or NaN.
        ///
        /// - Returns: whether the optimizer stepped (false: skipped for inf/NaN).
        @discardableResult
        public func step(_ optimizer: optim.Optimizer) -> Bool {
            guard enabled else { optimizer.step(); return true }
            let id = ObjectIdentifier(optimizer)
            let stage = perOptimizer[id]?.stage ?? .ready
            precondition(stage != .stepped, "step() has already been called since the last update().")
            if stage == .ready { unscale_(optimizer) }
            guard let found = perOptimizer[id]?.foundInf else {
                preconditionFailure("No inf checks were recorded for this optimizer.")
            }
            if !found { optimizer.step() }
            perOptimizer[id] = (.stepped, found)
            return !found
        }

        /// Adapts the scale from the steps since the last update (backs off if any optimizer saw inf/NaN, grows
        /// after `growthInterval` clean updates), or sets it to `newScale`; then readies every optimizer again.
        public func update(newScale: Double? = nil) {
            guard enabled else { return }
            defer { perOptimizer.removeAll() }
            if let newScale { scaleValue = newScale; return }
            let records = perOptimizer.values.compactMap(\.foundInf)
            precondition(!records.isEmpty, "No inf checks were recorded prior to update.")
            if records.contains(true) {
                scaleValue *= backoffFactor
                growthTracker = 0
            } else {
                growthTracker += 1
                if growthTracker == growthInterval {
                    let grown = scaleValue * growthFactor
                    if grown.isFinite { scaleValue = grown }
                    growthTracker = 0
                }
            }
        }

        /// The current scale (1 when disabled), as `get_scale()`.
        public func getScale() -> Double { enabled ? scaleValue : 1 }
        public func getGrowthFactor() -> Double { growthFactor }
        public func setGrowthFactor(_ value: Double) { growthFactor = value }
        public func getBackoffFactor() -> Double { backoffFactor }
        public func setBackoffFactor(_ value: Double) { backoffFactor = value }
        public func getGrowthInterval() -> Int { growthInterval }
        public func setGrowthInterval(_ value: Int) { growthInterval = value }

        /// `{"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}` as PyTorch saves it
        /// (empty when disabled), for checkpoints next to the model's and optimizer's.
        public func stateDict() -> StateValue {
            guard enabled else { return .dict([]) }
            return .dict([
                (.string("scale"), .double(scaleValue)),
                (.string("growth_factor"), .double(growthFactor)),
                (.string("backoff_factor"), .double(backoffFactor)),
                (.string("growth_interval"), .int(growthInterval)),
                (.string("_growth_tracker"), .int(growthTracker)),
            ])
        }

        /// Restores what `stateDict()` saved (or PyTorch's `scaler.state_dict()`).
        ///
        /// - Throws: ``GradScalerError`` when this scaler is disabled, or the dict is empty or malformed.
        public func loadStateDict(_ state: StateValue) throws {
            guard enabled else { throw GradScalerError.disabled }
            guard let entries = state.dictValue, !entries.isEmpty else { throw GradScalerError.emptyStateDict }
            func number(_ key: String) throws -> Double {
                switch state[key] {
                case .double(let v)?: return v
                case .int(let v)?: return Double(v)
                case .tensor(let t)? where t.numel == 1: return t.item()
                default: throw GradScalerError.invalidStateDict("expected a number under '\(key)'")
                }
            }
            let scale = try number("scale"), growth = try number("growth_factor"), backoff = try number("backoff_factor")
            let interval = try number("growth_interval"), tracker = try number("_growth_tracker")
            (scaleValue, growthFactor, backoffFactor) = (scale, growth, backoff)
            (growthInterval, growthTracker) = (Int(interval), Int(tracker))
        }
    }

    /// Why a ``GradScaler`` state dict could not be loaded.
    public enum GradScalerError: Error, CustomStringConvertible, Equatable {
        case disabled
        case emptyStateDict
        case invalidStateDict(String)

        public var description: String {
            switch self {
            case .disabled: return "Attempted to call load_state_dict() on a disabled GradScaler."
            case .emptyStateDict:
                return "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler."
            case .invalidStateDict(let why): return "GradScaler state dict: \(why)"
            }
        }
    }
}

extension torch.cuda {
    /// PyTorch's older spellings, `torch.cuda.amp.GradScaler` and `torch.cuda.amp.autocast`.
    public enum amp {
        public typealias GradScaler = torch.amp.GradScaler

        /// `torch.autocast(deviceType: "cuda", …)`.
        public static func autocast<R>(enabled: Bool = true, dtype: DType = .float16, cacheEnabled: Bool = true,
                                       _ body: () throws -> R) rethrows -> R {
            try torch.autocast(deviceType: "cuda", dtype: dtype, enabled: enabled, cacheEnabled: cacheEnabled, body)
        }
    }
}
