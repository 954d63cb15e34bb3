;; The quantised pass's estimate (sqlite-vector-estimate.ts), the same arithmetic as `estimate` in
;; sqlite-vector-cache.ts term for term (doubles, summed in the same order), so both give the same
;; float32 for every code. `npm run build:wasm` turns this file into sqlite-vector-estimate.wasm.ts.
(module
  (memory (export "memory") 1)
  ;; For the `count` codes from byte $codes on (`words` 32-bit words each) and their alphas from byte
  ;; $alpha on: out[n] = f32(alpha[n] * (2 * s - qsum)), s = the sum over the code's words x of
  ;; ((lut[x & 255] + lut[256 + (x >> 8 & 255)]) + lut[512 + (x >> 16 & 255)]) + lut[768 + (x >> 24)],
  ;; the lookup table (float32, 256 entries per code byte) 1,024 entries further on for each word.
  (func (export "estimate")
    (param $lut i32) (param $codes i32) (param $alpha i32) (param $count i32) (param $words i32) (param $qsum f64) (param $out i32)
    (local $end i32) (local $wend i32) (local $base i32) (local $x i32) (local $s f64)
    (local.set $end (i32.add (local.get $alpha) (i32.shl (local.get $count) (i32.const 2))))
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $alpha) (local.get $end)))
        (local.set $s (f64.const 0))
        (local.set $base (local.get $lut))
        (local.set $wend (i32.add (local.get $codes) (i32.shl (local.get $words) (i32.const 2))))
        (loop $word
          (local.set $x (i32.load (local.get $codes)))
          (local.set $s (f64.add (local.get $s)
            (f64.add
              (f64.add
                (f64.add
                  (f64.promote_f32 (f32.load (i32.add (local.get $base) (i32.shl (i32.and (local.get $x) (i32.const 255)) (i32.const 2)))))
                  (f64.promote_f32 (f32.load offset=1024 (i32.add (local.get $base) (i32.shl (i32.and (i32.shr_u (local.get $x) (i32.const 8)) (i32.const 255)) (i32.const 2))))))
                (f64.promote_f32 (f32.load offset=2048 (i32.add (local.get $base) (i32.shl (i32.and (i32.shr_u (local.get $x) (i32.const 16)) (i32.const 255)) (i32.const 2))))))
              (f64.promote_f32 (f32.load offset=3072 (i32.add (local.get $base) (i32.shl (i32.shr_u (local.get $x) (i32.const 24)) (i32.const 2))))))))
          (local.set $base (i32.add (local.get $base) (i32.const 4096)))
          (local.set $codes (i32.add (local.get $codes) (i32.const 4)))
          (br_if $word (i32.lt_u (local.get $codes) (local.get $wend))))
        (f32.store (local.get $out)
          (f32.demote_f64 (f64.mul (f64.promote_f32 (f32.load (local.get $alpha))) (f64.sub (f64.mul (f64.const 2) (local.get $s)) (local.get $qsum)))))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (local.set $alpha (i32.add (local.get $alpha) (i32.const 4)))
        (br $each)))))
