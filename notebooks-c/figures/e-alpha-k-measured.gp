set terminal pngcairo size 720,440 font 'sans,10'
set output 'e-alpha-k-measured.png'
set title 'Draft model on the embedded Shakespeare target: measured points on E(alpha, k)'
set xlabel 'per-token acceptance rate alpha'
set ylabel 'tokens per target pass'
set grid
set key top left maxrows 6
set xrange [0:1]
set yrange [1:7]
# each measured point in the colour of its own k's curve, named in the key: the points
# sit close together, and text beside them would overprint
plot for [k = 1:6] 'e-alpha-k.dat' using 1:(column(k + 1)) with lines lw 1 lc k title sprintf('k = %d', k), \
     for [k = 1:6] 'e-alpha-k-measured.dat' using 2:($1 == k ? $4 : 1/0) with points pt 3 + 2 * k ps 1.4 lc k title sprintf('measured, k = %d', k)
