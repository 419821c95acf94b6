"""Assets compiled as MuJoCo's compiler does: meshes, hulls, heightfields, textures."""
