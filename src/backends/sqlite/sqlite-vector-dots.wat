;; The exact re-rank's dot products (sqlite-vector-dots.ts) in 128-bit SIMD, reading the vectors
;; where they are: memory 0 is the cache's shared memory of vectors (slot i's `dims` float32 from
;; byte i * dims * 4), imported; memory 1 (`scratch`) is this thread's, for the query, the slots
;; and the scores. `npm run build:wasm` turns this file into sqlite-vector-dots.wasm.ts.
(module
  (import "vectors" "memory" (memory 1 65536 shared))
  (memory (export "scratch") 1)
  ;; out[n] = the dot product of the query at $q with slot slots[n]'s vector, for n < count;
  ;; `dims` a multiple of 4. Eight vectors per pass over the query, so that their reads overlap:
  ;; a re-rank's vectors are scattered and mostly not in cache (1,000 of 384 dimensions: 0.24 ms
  ;; four per pass, 0.18 eight per pass; twelve or sixteen were no faster). Lane l of a vector's
  ;; accumulator sums q[j] * v[j] for j = l mod 4 in order, in float32; then
  ;; (lane 0 + lane 1) + (lane 2 + lane 3): as sqlite-vector-estimate.wat's `dots`, and `dotsF32`.
  (func (export "dotsAt")
    (param $q i32) (param $slots i32) (param $count i32) (param $dims i32) (param $out i32)
    (local $stride i32) (local $qend i32) (local $end i32) (local $j i32) (local $x v128)
    (local $p0 i32) (local $p1 i32) (local $p2 i32) (local $p3 i32) (local $p4 i32) (local $p5 i32) (local $p6 i32) (local $p7 i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $a4 v128) (local $a5 v128) (local $a6 v128) (local $a7 v128)
    (local.set $stride (i32.shl (local.get $dims) (i32.const 2)))
    (local.set $qend (i32.add (local.get $q) (local.get $stride)))
    ;; Whole groups of eight slots, then one at a time.
    (local.set $end (i32.add (local.get $out) (i32.shl (i32.and (local.get $count) (i32.const -8)) (i32.const 2))))
    (block $eights
      (loop $eight
        (br_if $eights (i32.ge_u (local.get $out) (local.get $end)))
        (local.set $p0 (i32.mul (i32.load 1 offset=0 (local.get $slots)) (local.get $stride)))
        (local.set $p1 (i32.mul (i32.load 1 offset=4 (local.get $slots)) (local.get $stride)))
        (local.set $p2 (i32.mul (i32.load 1 offset=8 (local.get $slots)) (local.get $stride)))
        (local.set $p3 (i32.mul (i32.load 1 offset=12 (local.get $slots)) (local.get $stride)))
        (local.set $p4 (i32.mul (i32.load 1 offset=16 (local.get $slots)) (local.get $stride)))
        (local.set $p5 (i32.mul (i32.load 1 offset=20 (local.get $slots)) (local.get $stride)))
        (local.set $p6 (i32.mul (i32.load 1 offset=24 (local.get $slots)) (local.get $stride)))
        (local.set $p7 (i32.mul (i32.load 1 offset=28 (local.get $slots)) (local.get $stride)))
        (local.set $a0 (v128.const i32x4 0 0 0 0))
        (local.set $a1 (v128.const i32x4 0 0 0 0))
        (local.set $a2 (v128.const i32x4 0 0 0 0))
        (local.set $a3 (v128.const i32x4 0 0 0 0))
        (local.set $a4 (v128.const i32x4 0 0 0 0))
        (local.set $a5 (v128.const i32x4 0 0 0 0))
        (local.set $a6 (v128.const i32x4 0 0 0 0))
        (local.set $a7 (v128.const i32x4 0 0 0 0))
        (local.set $j (local.get $q))
        (loop $dim
          (local.set $x (v128.load 1 (local.get $j)))
          (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $x) (v128.load (local.get $p0)))))
          (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $x) (v128.load (local.get $p1)))))
          (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $x) (v128.load (local.get $p2)))))
          (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $x) (v128.load (local.get $p3)))))
          (local.set $a4 (f32x4.add (local.get $a4) (f32x4.mul (local.get $x) (v128.load (local.get $p4)))))
          (local.set $a5 (f32x4.add (local.get $a5) (f32x4.mul (local.get $x) (v128.load (local.get $p5)))))
          (local.set $a6 (f32x4.add (local.get $a6) (f32x4.mul (local.get $x) (v128.load (local.get $p6)))))
          (local.set $a7 (f32x4.add (local.get $a7) (f32x4.mul (local.get $x) (v128.load (local.get $p7)))))
          (local.set $p0 (i32.add (local.get $p0) (i32.const 16)))
          (local.set $p1 (i32.add (local.get $p1) (i32.const 16)))
          (local.set $p2 (i32.add (local.get $p2) (i32.const 16)))
          (local.set $p3 (i32.add (local.get $p3) (i32.const 16)))
          (local.set $p4 (i32.add (local.get $p4) (i32.const 16)))
          (local.set $p5 (i32.add (local.get $p5) (i32.const 16)))
          (local.set $p6 (i32.add (local.get $p6) (i32.const 16)))
          (local.set $p7 (i32.add (local.get $p7) (i32.const 16)))
          (local.set $j (i32.add (local.get $j) (i32.const 16)))
          (br_if $dim (i32.lt_u (local.get $j) (local.get $qend))))
        (f32.store 1 offset=0 (local.get $out) (call $sum (local.get $a0)))
        (f32.store 1 offset=4 (local.get $out) (call $sum (local.get $a1)))
        (f32.store 1 offset=8 (local.get $out) (call $sum (local.get $a2)))
        (f32.store 1 offset=12 (local.get $out) (call $sum (local.get $a3)))
        (f32.store 1 offset=16 (local.get $out) (call $sum (local.get $a4)))
        (f32.store 1 offset=20 (local.get $out) (call $sum (local.get $a5)))
        (f32.store 1 offset=24 (local.get $out) (call $sum (local.get $a6)))
        (f32.store 1 offset=28 (local.get $out) (call $sum (local.get $a7)))
        (local.set $slots (i32.add (local.get $slots) (i32.const 32)))
        (local.set $out (i32.add (local.get $out) (i32.const 32)))
        (br $eight)))
    (local.set $end (i32.add (local.get $end) (i32.shl (i32.and (local.get $count) (i32.const 7)) (i32.const 2))))
    (block $ones
      (loop $one
        (br_if $ones (i32.ge_u (local.get $out) (local.get $end)))
        (local.set $p0 (i32.mul (i32.load 1 (local.get $slots)) (local.get $stride)))
        (local.set $a0 (v128.const i32x4 0 0 0 0))
        (local.set $j (local.get $q))
        (loop $dim1
          (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (v128.load 1 (local.get $j)) (v128.load (local.get $p0)))))
          (local.set $p0 (i32.add (local.get $p0) (i32.const 16)))
          (local.set $j (i32.add (local.get $j) (i32.const 16)))
          (br_if $dim1 (i32.lt_u (local.get $j) (local.get $qend))))
        (f32.store 1 (local.get $out) (call $sum (local.get $a0)))
        (local.set $slots (i32.add (local.get $slots) (i32.const 4)))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (br $one))))
  ;; (lane 0 + lane 1) + (lane 2 + lane 3), in float32.
  (func $sum (param $v v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v))))))
