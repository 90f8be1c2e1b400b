import XCTest
@testable import Torch

/// nn.Module: reflection, traversal, modes, conversion, hooks, state dicts, printing, containers.
final class ModuleTests: XCTestCase {
    // The Rosetta network of docs/architecture.md §1.
    final class MyNeuralNet: nn.Module {
        let inputToHiddenLayer = nn.Linear(2, 8)
        let hiddenLayerActivation = nn.ReLU()
        let hiddenToOutputLayer = nn.Linear(8, 1)
        override func forward(_ x: Tensor) -> Tensor {
            hiddenToOutputLayer(hiddenLayerActivation(inputToHiddenLayer(x)))
        }
    }

    final class Block: nn.Module {
        let fc = nn.Linear(4, 4)
        let act = nn.ReLU()
        override func forward(_ x: Tensor) -> Tensor { act(fc(x)) }
    }

    /// Mirrors `Nested` in scripts/fixtures/nn_layers.py.
    final class Nested: nn.Module {
        let stem = nn.Linear(3, 4)
        let layer1 = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), Block())
        let blocks = nn.ModuleList([Block(), Block()])
        let scale = nn.Parameter(torch.ones(1))
        let head = nn.Linear(4, 2, bias: false)
        override init() {
            super.init()
            registerBuffer("steps", torch.zeros(1))
            registerBuffer("tmp", torch.zeros(1), persistent: false)
        }
    }

    /// The same network with the ModuleList written as a Swift array property.
    final class NestedArray: nn.Module {
        let stem = nn.Linear(3, 4)
        let layer1 = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), Block())
        let blocks = [Block(), Block()]
        let scale = nn.Parameter(torch.ones(1))
        let head = nn.Linear(4, 2, bias: false)
        override init() {
            super.init()
            registerBuffer("steps", torch.zeros(1))
            registerBuffer("tmp", torch.zeros(1), persistent: false)
        }
    }

    final class Net: nn.Module {
        let fc = nn.Linear(3, 3)
        override func forward(_ x: Tensor) -> Tensor { fc(x) }
    }

    private func cases(_ kind: String) throws -> [[String: Any]] {
        try loadFixtureCases("nn_layers").filter { $0["kind"] as? String == kind }
    }

    // MARK: Printing

    func testRosettaReprMatchesPyTorch() throws {
        let expected = try cases("repr").first { $0["name"] as? String == "mynet" }!["repr"] as! String
        XCTAssertEqual(MyNeuralNet().description, expected)
        XCTAssertEqual("\(MyNeuralNet())", expected)
    }

    func testReprsMatchPyTorch() throws {
        let modules: [String: nn.Module] = [
            "sequential": nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1)),
            "sequential_named": nn.Sequential(["fc1": nn.Linear(2, 8), "act": nn.ReLU()]),
            "nested": Nested(),
            "empty_sequential": nn.Sequential(),
            "empty_modulelist": nn.ModuleList(),
            "modulelist_runs": nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)]),
            "moduledict": nn.ModuleDict(["a": nn.ReLU(), "b": nn.Sequential(nn.Linear(1, 1))]),
            "linear_nobias": nn.Linear(2, 3, bias: false),
            "bilinear": nn.Bilinear(2, 3, 4),
            "identity": nn.Identity(),
            "flatten": nn.Flatten(),
            "flatten_args": nn.Flatten(startDim: 0, endDim: 2),
            "unflatten": nn.Unflatten(1, [2, 3]),
            "unflatten1": nn.Unflatten(1, [6]),
            "relu": nn.ReLU(), "relu_inplace": nn.ReLU(inplace: true), "relu6": nn.ReLU6(),
            "leaky": nn.LeakyReLU(), "leaky_args": nn.LeakyReLU(0.2, inplace: true),
            "prelu": nn.PReLU(), "prelu3": nn.PReLU(numParameters: 3),
            "elu": nn.ELU(), "elu_half": nn.ELU(alpha: 0.5), "selu": nn.SELU(), "celu": nn.CELU(),
            "gelu": nn.GELU(), "gelu_tanh": nn.GELU(approximate: "tanh"), "silu": nn.SiLU(), "mish": nn.Mish(),
            "sigmoid": nn.Sigmoid(), "tanh": nn.Tanh(), "hardtanh": nn.Hardtanh(), "hardtanh_args": nn.Hardtanh(-2, 3),
            "hardsigmoid": nn.Hardsigmoid(), "hardswish": nn.Hardswish(), "softplus": nn.Softplus(),
            "softplus_args": nn.Softplus(beta: 2, threshold: 10), "softsign": nn.Softsign(),
            "softmax": nn.Softmax(dim: 1), "softmax_none": nn.Softmax(), "logsoftmax": nn.LogSoftmax(dim: -1),
            "softmax2d": nn.Softmax2d(), "softmin": nn.Softmin(dim: 0),
        ]
        var checked = 0
        for c in try cases("repr") {
            let name = c["name"] as! String
            guard name != "mynet" else { continue }
            let expected = c["repr"] as! String
            guard let m = modules[name] else { XCTFail("no Swift module for \(name)"); continue }
            XCTAssertEqual(m.description, expected, name)
            checked += 1
        }
        XCTAssertEqual(checked, modules.count)
        // The array-property form prints exactly like the nn.ModuleList form.
        XCTAssertEqual(NestedArray().description.replacingOccurrences(of: "NestedArray(", with: "Nested("), Nested().description)
    }

    func testParameterRepr() {
        let p = nn.Parameter(torch.tensor([1.0, 2.0]))
        XCTAssertEqual(p.description, "Parameter containing:\ntensor([1., 2.], requires_grad=True)")
        let q = nn.Parameter(torch.tensor([1, 2]), requiresGrad: false)
        XCTAssertEqual(q.description, "Parameter containing:\ntensor([1, 2])")
    }

    final class Scaled<T>: nn.Module {
        override func extraRepr() -> String { "factor=2\nmode=fast" }
    }

    func testCustomExtraReprAndGenericName() {
        XCTAssertEqual(Scaled<Int>().description, "Scaled(\n  factor=2\n  mode=fast\n)")
    }

    // MARK: Discovery and traversal

    func testNestedStructureMatchesPyTorch() throws {
        let c = try cases("structure")[0]
        for model in [Nested(), NestedArray()] as [nn.Module] {
            let sd = model.stateDict()
            XCTAssertEqual(sd.keys, c["state_keys"] as! [String])
            XCTAssertEqual(sd.values.map { $0.shape }, c["state_shapes"] as! [[Int]])
            XCTAssertEqual(model.namedParameters().map { $0.0 }, c["parameter_names"] as! [String])
            XCTAssertEqual(model.namedBuffers().map { $0.0 }, c["buffer_names"] as! [String])
            XCTAssertEqual(model.namedModules().map { $0.0 }, c["module_names"] as! [String])
            XCTAssertEqual(model.namedChildren().map { $0.0 }, c["children_names"] as! [String])
            XCTAssertEqual(model.parameters().count, 12)
            XCTAssertEqual(model.modules().count, 16)
            XCTAssertEqual(model.children().count, 4)
            XCTAssertEqual(model.parameters(recurse: false).count, 1)
            XCTAssertNil(sd.values.first { $0.requiresGrad })
            XCTAssertTrue(model.getSubmodule("layer1.2.fc") is nn.Linear)
            XCTAssertTrue(model.getParameter("blocks.1.fc.bias") === (model.getSubmodule("blocks.1") as! Block).fc.bias)
            XCTAssertEqual(model.getBuffer("steps").shape, [1])
        }
        // The array property's ModuleList keeps its identity between traversals.
        let n = NestedArray()
        XCTAssertTrue(n.getSubmodule("blocks") === n.getSubmodule("blocks"))
        XCTAssertTrue(n.getSubmodule("blocks.1") === n.blocks[1])
    }

    func testStateDictSharesStorageAndIsDetached() {
        let net = Net()
        let sd = net.stateDict()
        XCTAssertTrue(sd["fc.weight"]!.storage === net.fc.weight.storage)
        XCTAssertFalse(sd["fc.weight"]!.requiresGrad)
        XCTAssertTrue(net.stateDict(keepVars: true)["fc.weight"]! === net.fc.weight)
    }

    func testOptionalLazyAndParameterArrayProperties() {
        final class M: nn.Module {
            let a: nn.Linear? = nn.Linear(1, 1)
            let b: nn.Linear? = nil
            lazy var c = nn.Linear(1, 2)
            let ps = [nn.Parameter(torch.zeros(2)), nn.Parameter(torch.ones(3))]
            let plain = torch.zeros(3)          // a plain tensor is not registered
            let count = 3
        }
        let m = M()
        XCTAssertEqual(m.namedParameters().map { $0.0 }, ["ps.0", "ps.1", "a.weight", "a.bias"])
        _ = m.c
        XCTAssertEqual(m.namedChildren().map { $0.0 }, ["a", "c"])
        XCTAssertEqual(m.stateDict().keys, ["ps.0", "ps.1", "a.weight", "a.bias", "c.weight", "c.bias"])
    }

    func testReassignedWeakUnownedAndExistentialProperties() {
        final class Swappable: nn.Module {
            var fc = nn.Linear(2, 2)
            var head: nn.Linear? = nil
            weak var parent: nn.Module?
            unowned let owner: nn.Module
            init(owner: nn.Module) { self.owner = owner; super.init() }
        }
        let owner = nn.Identity()
        let m = Swappable(owner: owner)
        XCTAssertEqual(m.namedChildren().map { $0.0 }, ["fc", "owner"])
        m.parent = owner                               // a weak reference is never registered
        m.head = nn.Linear(2, 1)
        m.fc = nn.Linear(2, 3)                         // reassignment (e.g. fine-tuning) is seen
        XCTAssertEqual(m.namedChildren().map { $0.0 }, ["fc", "head", "owner"])
        XCTAssertEqual(m.getParameter("fc.weight").shape, [3, 2])
        XCTAssertEqual(m.parameters().count, 4)
        XCTAssertTrue(m.getSubmodule("owner") === owner)

        final class WithExistential: nn.Module {
            let act: Any = nn.ReLU()
            let fc = nn.Linear(1, 1)
            let note: any CustomStringConvertible = "not a module"
        }
        XCTAssertEqual(WithExistential().namedChildren().map { $0.0 }, ["act", "fc"])
    }

    func testSubclassOfSubclassListsBaseMembersFirst() {
        class Base: nn.Module { let first = nn.Linear(1, 1) }
        final class Derived: Base { let second = nn.Linear(1, 1) }
        XCTAssertEqual(Derived().namedChildren().map { $0.0 }, ["first", "second"])
    }

    func testSharedModulesAndParametersAreListedOnce() {
        final class Tied: nn.Module {
            let enc = nn.Linear(2, 2)
            lazy var dec: nn.Linear = enc
        }
        let t = Tied()
        _ = t.dec
        XCTAssertEqual(t.parameters().count, 2)
        XCTAssertEqual(t.namedModules().map { $0.0 }, ["", "enc"])
        // state_dict lists both paths, as PyTorch does.
        XCTAssertEqual(t.stateDict().keys, ["enc.weight", "enc.bias", "dec.weight", "dec.bias"])
    }

    func testRegistration() {
        final class M: nn.Module {
            override init() {
                super.init()
                registerParameter("alpha", nn.Parameter(torch.ones(2)))
                registerBuffer("running", torch.zeros(2))
                addModule("extra", nn.Linear(2, 2))
                registerModule("gone", nn.ReLU())
                addModule("gone", nil)
            }
        }
        let m = M()
        XCTAssertEqual(m.namedParameters().map { $0.0 }, ["alpha", "extra.weight", "extra.bias"])
        XCTAssertEqual(m.stateDict().keys, ["alpha", "running", "extra.weight", "extra.bias"])
        XCTAssertEqual(m.description, "M(\n  (extra): Linear(in_features=2, out_features=2, bias=True)\n)")
    }

    // MARK: Modes, gradients, conversion

    func testTrainEvalPropagates() {
        let n = NestedArray()
        XCTAssertTrue(n.modules().allSatisfy { $0.training })
        n.eval()
        XCTAssertTrue(n.modules().allSatisfy { !$0.training })
        XCTAssertFalse(n.blocks[0].fc.training)
        n.train()
        XCTAssertTrue(n.modules().allSatisfy { $0.training })
    }

    func testZeroGrad() {
        let net = MyNeuralNet()
        net(torch.ones(3, 2)).sum().backward()
        XCTAssertNotNil(net.inputToHiddenLayer.weight.grad)
        net.zeroGrad(setToNone: false)
        XCTAssertEqual(net.inputToHiddenLayer.weight.grad!.abs().sum().item(), 0)
        net.zeroGrad()
        XCTAssertTrue(net.parameters().allSatisfy { $0.grad == nil })
    }

    func testToDtypeConvertsInPlace() {
        let net = MyNeuralNet()
        let params = net.parameters()        // what an optimizer would hold
        let before = params[0].toArray(as: Double.self)
        net(torch.ones(1, 2)).sum().backward()
        net.double()
        XCTAssertTrue(net.parameters()[0] === params[0])
        XCTAssertEqual(params[0].dtype, .float64)
        XCTAssertEqual(params[0].grad!.dtype, .float64)
        XCTAssertTrue(params[0].requiresGrad)
        XCTAssertEqual(params[0].toArray(as: Double.self), before)
        let y = net(torch.ones(1, 2, dtype: .float64))
        XCTAssertEqual(y.dtype, .float64)
        net.float()
        XCTAssertEqual(net.stateDict().values.map { $0.dtype }, [DType](repeating: .float32, count: 4))
        let n = Nested().to(.float64)
        XCTAssertEqual(n.getBuffer("steps").dtype, .float64)
        XCTAssertTrue(n.to(.cpu) === n)
    }

    func testApplyVisitsChildrenFirst() {
        var seen: [String] = []
        let model = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU()))
        model.apply { seen.append($0.typeName) }
        XCTAssertEqual(seen, ["Linear", "ReLU", "Sequential", "Sequential"])
        model.apply { m in if let l = m as? nn.Linear { nn.init_.zeros_(l.weight) } }
        XCTAssertEqual((model[0] as! nn.Linear).weight.item(), 0)
    }

    func testRequiresGrad_() {
        let net = MyNeuralNet().requiresGrad_(false)
        XCTAssertTrue(net.parameters().allSatisfy { !$0.requiresGrad })
        net.requiresGrad_()
        XCTAssertTrue(net.parameters().allSatisfy { $0.requiresGrad })
    }

    func testForwardHooks() {
        let relu = nn.ReLU()
        var calls: [String] = []
        let pre = relu.registerForwardPreHook { _, x in calls.append("pre"); return x - 1 }
        let post = relu.registerForwardHook { m, input, output in
            calls.append("post \(m.typeName) \(input.item()) \(output.item())")
            return output * 10
        }
        XCTAssertEqual(relu(torch.tensor([3.0])).item(), 20)
        XCTAssertEqual(calls, ["pre", "post ReLU 2.0 2.0"])
        pre.remove()
        post.remove()
        XCTAssertEqual(relu(torch.tensor([3.0])).item(), 3)
        XCTAssertEqual(calls.count, 2)
    }

    // MARK: State dicts

    func testLoadStateDictErrorsMatchPyTorch() throws {
        let w = torch.zeros(3, 3), b = torch.zeros(3)
        let inputs: [String: (OrderedDict<Tensor>, Bool)] = [
            "missing": (["fc.weight": w], true),
            "unexpected": (["fc.weight": w, "fc.bias": b, "fc.extra": b, "other.weight": w], true),
            "size": (["fc.weight": torch.zeros(2, 3), "fc.bias": b], true),
            "all": (["fc.weight": torch.zeros(2, 3), "extra": b], true),
            "nonstrict": (["fc.weight": w, "junk": b], false),
            "nonstrict_size": (["fc.weight": torch.zeros(3, 2)], false),
        ]
        for c in try cases("load") {
            let name = c["name"] as! String
            let (sd, strict) = inputs[name]!
            do {
                let r = try Net().loadStateDict(sd, strict: strict)
                XCTAssertTrue(c["error"] is NSNull, "\(name) should have thrown")
                XCTAssertEqual(r.missingKeys, c["missing"] as? [String])
                XCTAssertEqual(r.unexpectedKeys, c["unexpected"] as? [String])
            } catch let e as StateDictLoadError {
                XCTAssertEqual(e.description, c["error"] as? String, name)
            }
        }
    }

    func testLoadStateDictCopiesInPlace() throws {
        let a = MyNeuralNet(), b = MyNeuralNet()
        let w = b.inputToHiddenLayer.weight
        let r = try b.loadStateDict(a.stateDict())
        XCTAssertEqual(r.missingKeys, [])
        XCTAssertTrue(b.inputToHiddenLayer.weight === w)
        XCTAssertFalse(w.storage === a.inputToHiddenLayer.weight.storage)
        for (x, y) in zip(a.parameters(), b.parameters()) { XCTAssertTrue(x.equal(y)) }
        XCTAssertTrue(w.requiresGrad && w.isLeaf)
    }

    func testSnakeCaseKeysLoadIntoCamelCaseProperties() throws {
        let src = MyNeuralNet()
        var sd = OrderedDict<Tensor>()
        for (k, v) in src.stateDict() {
            let snake = k.replacingOccurrences(of: "inputToHiddenLayer", with: "input_to_hidden_layer")
                .replacingOccurrences(of: "hiddenToOutputLayer", with: "hidden_to_output_layer")
            sd[snake] = v.clone()
        }
        XCTAssertEqual(sd.keys.first, "input_to_hidden_layer.weight")
        let dst = MyNeuralNet()
        let r = try dst.loadStateDict(sd)
        XCTAssertEqual(r.missingKeys + r.unexpectedKeys, [])
        XCTAssertTrue(dst.inputToHiddenLayer.weight.equal(src.inputToHiddenLayer.weight))
        XCTAssertTrue(dst.hiddenToOutputLayer.bias!.equal(src.hiddenToOutputLayer.bias!))
        XCTAssertEqual(normalizeStateDictKey("layer_1.0.weight_ih_l0"), "layer1.0.weightIhL0")
        XCTAssertEqual(normalizeStateDictKey("_private.x"), "_private.x")
    }

    func testLoadStateDictScalarCompatibilityAndBuffers() throws {
        final class M: nn.Module {
            let s = nn.Parameter(torch.tensor(1.0))
            override init() { super.init(); registerBuffer("count", torch.tensor(0)) }
        }
        let m = M()
        try m.loadStateDict(["s": torch.tensor([5.0]), "count": torch.tensor(7)])
        XCTAssertEqual(m.s.item(), 5)
        XCTAssertEqual(m.getBuffer("count").item(), 7)
    }

    // MARK: Containers

    func testSequentialAPI() {
        let seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
        XCTAssertEqual(seq.count, 2)
        XCTAssertTrue(seq[-1] is nn.ReLU)
        seq.append(nn.Linear(3, 1))
        XCTAssertEqual(seq.stateDict().keys, ["0.weight", "0.bias", "2.weight", "2.bias"])
        XCTAssertEqual(seq.map { $0.typeName }, ["Linear", "ReLU", "Linear"])
        XCTAssertEqual(seq(torch.ones(4, 2)).shape, [4, 1])
        let tail = seq[1..<3]
        XCTAssertEqual(tail.namedChildren().map { $0.0 }, ["1", "2"])
        seq.insert(0, nn.Identity())
        XCTAssertEqual(seq.namedChildren().map { $0.0 }, ["0", "1", "2", "3"])
        XCTAssertTrue(seq[0] is nn.Identity)
        seq.remove(at: 0)
        XCTAssertTrue(seq[0] is nn.Linear)
        seq[1] = nn.Tanh()
        XCTAssertTrue(seq[1] is nn.Tanh)
        let named = nn.Sequential([("fc", nn.Linear(2, 2)), ("act", nn.Sigmoid())])
        XCTAssertEqual(named.stateDict().keys, ["fc.weight", "fc.bias"])
        XCTAssertEqual(nn.Sequential([nn.ReLU(), nn.ReLU()]).count, 2)
    }

    func testModuleListAndDictAPI() {
        let list = nn.ModuleList([nn.Linear(2, 2)])
        list.append(nn.ReLU()).extend([nn.Tanh()])
        list.insert(1, nn.Sigmoid())
        XCTAssertEqual(list.map { $0.typeName }, ["Linear", "Sigmoid", "ReLU", "Tanh"])
        XCTAssertEqual(list.namedChildren().map { $0.0 }, ["0", "1", "2", "3"])
        XCTAssertTrue(list[-1] is nn.Tanh)
        XCTAssertEqual(list.count, 4)

        let dict = nn.ModuleDict(["b": nn.Linear(1, 1), "a": nn.ReLU()])
        dict["c"] = nn.Tanh()
        XCTAssertEqual(dict.keys, ["b", "a", "c"])
        XCTAssertEqual(Array(dict), ["b", "a", "c"])
        XCTAssertTrue(dict["a"] is nn.ReLU)
        XCTAssertEqual(dict.stateDict().keys, ["b.weight", "b.bias"])
        dict.pop("b")
        XCTAssertEqual(dict.items.map { $0.key }, ["a", "c"])
        XCTAssertEqual(dict["c"]!(torch.zeros(1)).item(), 0)
    }

    func testOrderedDict() {
        var d: OrderedDict<Int> = ["b": 1, "a": 2]
        d["c"] = 3
        d["b"] = 10
        XCTAssertEqual(d.keys, ["b", "a", "c"])
        XCTAssertEqual(d.values, [10, 2, 3])
        d["a"] = nil
        XCTAssertEqual(d.keys, ["b", "c"])
        XCTAssertEqual(d["c"], 3)
        XCTAssertEqual(d.description, "OrderedDict([('b', 10), ('c', 3)])")
        XCTAssertEqual(OrderedDict<Int>().description, "OrderedDict()")
    }

    func testParameterSharesStorageAndIsLeaf() {
        let t = torch.randn(2, 3)
        let p = nn.Parameter(t)
        XCTAssertTrue(p.storage === t.storage)
        XCTAssertTrue(p.requiresGrad && p.isLeaf)
        XCTAssertFalse(t.requiresGrad)
        let y = (p * 2).sum()
        y.backward()
        assertClose(p.grad!, torch.fullLike(t, 2))
    }
}
