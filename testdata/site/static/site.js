document.addEventListener('DOMContentLoaded',function(){});
