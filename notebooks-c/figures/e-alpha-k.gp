set terminal pngcairo size 720,440 font 'sans,10'
set output 'e-alpha-k.png'
set title 'Expected tokens per target pass, E(alpha, k) = (1 - alpha^{k+1}) / (1 - alpha)'
set xlabel 'per-token acceptance rate alpha'
set ylabel 'tokens per target pass'
set grid
set key top left
set xrange [0:1]
set yrange [1:9]
plot for [k = 1:8] 'e-alpha-k.dat' using 1:(column(k + 1)) with lines lw 2 title sprintf('k = %d', k)
