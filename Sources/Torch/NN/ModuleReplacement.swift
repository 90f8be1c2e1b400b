/// Swapping a module's children in place, wherever they are held: registered children
/// (`nn.Sequential`, `nn.ModuleList`, `nn.ModuleDict`, `addModule`), stored properties and arrays of
/// modules. PyTorch does this with `setattr`/`add_module`; here a stored property is written
/// through its reflected field (`ModuleReflection`), which works when the property is a `var` whose
/// declared type can hold the new module (`var bn: nn.Module`, as torchvision's models declare
/// their layers).

extension nn.Module {
    /// Replaces each direct child `c` by `transform(c)` where that is a different module, keeping
    /// the child's name. `transform` runs once per child (per element for an array property).
    ///
    /// Stops with a precondition naming `op` when a stored property cannot hold the replacement:
    /// it is a `let`, its declared type is narrower (`var bn = nn.BatchNorm2d(8)` cannot hold
    /// another class), or it is existential (`any P`), which has no writable field layout.
    final func replaceChildren(_ op: String, _ transform: (nn.Module) -> nn.Module) {
        let layout = ModuleReflection.layout(for: type(of: self))
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque())
        // A non-nil optional field is checked once before use (a `weak` one becomes ignored).
        for i in layout.fields.indices where !layout.fields[i].verified {
            let bits = UnsafeRawPointer(base + layout.fields[i].offset).load(as: UInt.self)
            if bits != 0 { ModuleReflection.verify(layout, i, of: self, rawBits: bits) }
        }
        var handled = Set<String>()
        /// Stops unless the field is a `var`: the compiler may assume a `let` never changes.
        func checkMutable(_ f: ModuleReflection.Field, _ replacement: nn.Module) {
            precondition(f.isVar != false, "\(op): \(typeName).\(f.name) is a `let` property and cannot hold the "
                         + "\(replacement.typeName) that replaces it; declare it as `var \(f.name): nn.Module` (as torchvision's models do) "
                         + "or register the layer with addModule(_:_:)")
        }
        func cannotHold(_ name: String, _ declared: String, _ replacement: nn.Module) -> String {
            "\(op): \(typeName).\(name) is declared as \(declared), which cannot hold the \(replacement.typeName) "
                + "that replaces it; declare the property as `var \(name): nn.Module` (as torchvision's models do) "
                + "or register the layer with addModule(_:_:)"
        }
        for f in layout.fields {
            let p = base + f.offset
            switch f.kind {
            case .module:
                handled.insert(f.name)
                let m = UnsafeRawPointer(p).load(as: nn.Module.self)
                let r = transform(m)
                guard r !== m else { continue }
                checkMutable(f, r)
                let stored = (f.type as? nn.Module.Type)?.storeModule(r, p) ?? false
                precondition(stored, cannotHold(f.name, String(describing: f.type), r))
            case .optionalModule(let field):
                guard f.verified, let m = field.loadModule(UnsafeRawPointer(p)) else { continue }
                handled.insert(f.name)
                let r = transform(m)
                guard r !== m else { continue }
                checkMutable(f, r)
                precondition(field.storeModule(r, p), cannotHold(f.name, String(describing: f.type), r))
            case .moduleArray(let field):
                handled.insert(f.name)
                let ms = field.loadModules(UnsafeRawPointer(p))
                let rs = ms.map(transform)
                guard let changed = zip(ms, rs).first(where: { $0.0 !== $0.1 }) else { continue }
                checkMutable(f, changed.1)
                precondition(field.storeModules(rs, p), cannotHold(f.name, "[\(field.elementTypeName)]", changed.1))
            case .tensor, .optionalTensor, .tensorArray, .ignored:
                continue
            }
        }
        if layout.usesMirror {
            for (name, m) in reflectedMembers(parameters: false).modules where !handled.contains(name) {
                let r = transform(m)
                precondition(r === m, cannotHold(name, "an existential type", r))
            }
        }
        for (key, m) in registeredModules.items {
            let r = transform(m)
            if r !== m { registeredModules[key] = r }
        }
    }
}
