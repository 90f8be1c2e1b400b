extension onnx {
    /// ONNX's backend node conformance suite (`onnx/backend/test/data/node/` of the onnx wheel; fetched by
    /// scripts/fetch-onnx-conformance): each test folder holds `model.onnx` and `test_data_set_*/` with
    /// `input_*.pb` and `output_*.pb` TensorProtos. A test passes when every output has the expected dtype and
    /// shape and every value is within the suite's rule: |actual − expected| ≤ atol + rtol·|expected|.
    public enum conformance {
        public static let rtol = 1e-3
        public static let atol = 1e-7

        public enum Status: String, Sendable { case pass, fail, unsupported }

        public struct Result: Sendable, CustomStringConvertible {
            public let name: String
            public let status: Status
            /// For a failure: what differs (with the max abs difference); for unsupported: why.
            public let detail: String

            public init(name: String, status: Status, detail: String) {
                self.name = name; self.status = status; self.detail = detail
            }

            public var description: String {
                detail.isEmpty ? "\(status.rawValue.uppercased()) \(name)" : "\(status.rawValue.uppercased()) \(name): \(detail)"
            }
        }

        /// The test folders under `directory` (those with a model.onnx), sorted by name.
        public static func tests(in directory: String) -> [String] {
            let fm = FileManager.default
            let names = (try? fm.contentsOfDirectory(atPath: directory)) ?? []
            return names.sorted().filter { fm.fileExists(atPath: "\(directory)/\($0)/model.onnx") }
        }

        /// Runs every test under `directory` (optionally only names containing `filter`), in this process.
        public static func run(_ directory: String, filter: String? = nil,
                               progress: (Result) -> Void = { _ in }) -> [Result] {
            tests(in: directory).filter { filter == nil || $0.contains(filter!) }.map { name in
                let r = runTest("\(directory)/\(name)")
                progress(r)
                return r
            }
        }

        /// Runs one test folder.
        public static func runTest(_ folder: String) -> Result {
            let name = URL(fileURLWithPath: folder).lastPathComponent
            func unsupported(_ why: String) -> Result { Result(name: name, status: .unsupported, detail: why) }
            func fail(_ why: String) -> Result { Result(name: name, status: .fail, detail: why) }

            // The model: non-tensor inputs and outputs (sequences, maps, optionals) are outside SwiftTorch's values.
            let model: ONNXModel
            let proto: Onnx_ModelProto
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: "\(folder)/model.onnx"))
                proto = try onnx.parseModel(data, name: "\(folder)/model.onnx")
                for (kind, values) in [("input", proto.graph.input), ("output", proto.graph.output)] {
                    for v in values {
                        guard v.hasType else { continue }
                        switch v.type.value {
                        case .tensorType?, nil: continue
                        case .sequenceType?: return unsupported("\(kind) '\(v.name)' is a sequence")
                        case .optionalType?: return unsupported("\(kind) '\(v.name)' is an optional")
                        case .mapType?: return unsupported("\(kind) '\(v.name)' is a map")
                        case .sparseTensorType?: return unsupported("\(kind) '\(v.name)' is a sparse tensor")
                        case .opaqueType?: return unsupported("\(kind) '\(v.name)' is opaque")
                        }
                    }
                }
                model = try ONNXModel(proto: proto, baseDirectory: folder)
            } catch let e as ONNXError {
                if let why = unsupportedReason(e) { return unsupported(why) }
                return fail("load: \(e)")
            } catch {
                return fail("load: \(error)")
            }

            let fm = FileManager.default
            let sets = ((try? fm.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasPrefix("test_data_set_") }.sorted()
            guard !sets.isEmpty else { return fail("no test_data_set_* folder") }
            var worst = 0.0
            for set in sets {
                let dir = "\(folder)/\(set)"
                func numbered(_ prefix: String) -> [String] {
                    let files = ((try? fm.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasPrefix(prefix) && $0.hasSuffix(".pb") }
                    return files.sorted { Int($0.dropFirst(prefix.count).dropLast(3)) ?? 0 < Int($1.dropFirst(prefix.count).dropLast(3)) ?? 0 }
                }
                var inputs: [String: Tensor] = [:]
                var inputTypes: [String: Int32] = [:]
                var expected: [(String, Tensor, Int32?)] = []
                do {
                    // Inputs bind by position to the graph's inputs (all of them, as the suite's runner does).
                    let graphInputs = proto.graph.input.map(\.name)
                    for (i, f) in numbered("input_").enumerated() {
                        let (n, t, type) = try onnx.loadTypedTensor("\(dir)/\(f)")
                        let key = i < graphInputs.count ? graphInputs[i] : n
                        inputs[key] = t
                        if let type { inputTypes[key] = type }
                    }
                    for (i, f) in numbered("output_").enumerated() {
                        let (n, t, type) = try onnx.loadTypedTensor("\(dir)/\(f)")
                        expected.append((i < model.outputNames.count ? model.outputNames[i] : n, t, type))
                    }
                } catch let e as ONNXError {
                    if let why = unsupportedReason(e) { return unsupported("test data: \(why)") }
                    return unsupported("test data: \(e)")
                } catch {
                    return unsupported("test data: \(error)")
                }
                let outputs: [String: Tensor]
                let outputTypes: [String: Int32]
                do {
                    (outputs, outputTypes) = try model.runTyped(inputs, types: inputTypes)
                } catch let e as ONNXError {
                    if let why = unsupportedReason(e) { return unsupported(why) }
                    return fail("run: \(e)")
                } catch {
                    return fail("run: \(error)")
                }
                for (name, want, wantType) in expected {
                    guard let got = outputs[name] else { return fail("output '\(name)' missing") }
                    let gotType = ONNXEmulated.type(got, outputTypes[name]), expectedType = ONNXEmulated.type(want, wantType)
                    guard gotType == expectedType else {
                        return fail("output '\(name)': type \(onnx.dataTypeName(gotType)), expected \(onnx.dataTypeName(expectedType))")
                    }
                    if let why = compare(got, want, &worst) { return fail("output '\(name)': \(why)") }
                }
            }
            return Result(name: name, status: .pass, detail: worst > 0 ? "max diff \(worst)" : "")
        }

        /// Why an error means "not supported" rather than "wrong", or nil.
        static func unsupportedReason(_ e: ONNXError) -> String? {
            switch e {
            case let .unsupportedOperator(op, domain, _, _): return "operator \(domain.isEmpty ? "" : domain + ".")\(op)"
            case let .unsupportedDataType(_, t): return "data type \(onnx.dataTypeName(t))"
            case .unsupportedOpset, .unsupportedIRVersion: return e.description
            case let .malformed(_, reason) where reason.contains("not supported"): return reason
            case let .invalidTensor(_, reason) where reason.contains("not supported"): return reason
            case let .invalidNode(_, reason) where reason.hasSuffix("is not supported"): return reason
            default: return nil
            }
        }

        /// nil when `got` matches `want` under the suite's rule; otherwise what differs. Updates `worst`, the
        /// largest absolute difference seen.
        static func compare(_ got: Tensor, _ want: Tensor, _ worst: inout Double) -> String? {
            guard got.dtype == want.dtype else { return "dtype \(got.dtype), expected \(want.dtype)" }
            guard got.shape == want.shape else { return "shape \(got.shape), expected \(want.shape)" }
            if want.numel == 0 { return nil }
            let a = got.toArray(as: Double.self), b = want.toArray(as: Double.self)
            var maxDiff = 0.0, bad = 0, firstBad = -1
            for i in 0..<a.count {
                let x = a[i], y = b[i]
                if x.isNaN || y.isNaN {
                    if x.isNaN != y.isNaN { bad += 1; if firstBad < 0 { firstBad = i }; maxDiff = .infinity }
                    continue
                }
                if x == y { continue }
                let d = Swift.abs(x - y)
                if d.isNaN || d > maxDiff { maxDiff = d.isNaN ? .infinity : d }
                let ok = want.isFloatingPoint ? d <= atol + rtol * Swift.abs(y) : false
                if !ok { bad += 1; if firstBad < 0 { firstBad = i } }
            }
            worst = Swift.max(worst, maxDiff.isFinite ? maxDiff : worst)
            if bad == 0 { return nil }
            return "\(bad) of \(a.count) values differ, max diff \(maxDiff) (first at \(firstBad): \(a[firstBad]) vs \(b[firstBad]))"
        }
    }
}
