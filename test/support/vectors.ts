/**
 * A seeded unit vector of `dims` dimensions with nothing on axes 0..7, so it is orthogonal to every
 * unit-axis query on those axes (the MongoDB vector-copy contract's filler, and the vector-index
 * spec that reproduces its missed duplicate hint on the same data).
 */
export function noiseVector(i: number, dims: number): Float32Array {
  const v = new Float32Array(dims);
  for (let j = 8; j < dims; j++) v[j] = Math.sin(i * 12.9898 + j * 78.233) + 0.01;
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}
